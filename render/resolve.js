// calaf.resolve: turns the requirements of every node template into relationships (edges
// of the Clout), as TOSCA's requirement resolution does, with indexes instead of scans: a
// requirement that names its node template, its node type or its capability type looks
// only at the node templates that can match, and the relationships each capability has
// are counted as they are added. The time grows with the number of requirements, not with
// their product with the number of node templates. Same choices as Puccini's
// tosca.resolve (the golden tests of package render hold both to the same results):
// candidates in node template name order, their capabilities in name order; a capability
// still short of its minimum occurrences first (the highest minimum), else the one with
// the most room. Problems go to the "Resolution" section, at the requirement's location.
const tosca = require('tosca.lib.utils');
const traversal = require('tosca.lib.traversal');

const enforceOccurrences = !traversal.hasQuirk(clout, 'capabilities.occurrences.permissive');

// nameKey joins a node template name and a capability or requirement name.
function nameKey(node, name) {
  return node + '\u0000' + name;
}

// Topology indexes the node templates of the Clout, after taking out the relationships a
// previous resolution left.
function Topology() {
  this.nodes = [];
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isNodeTemplate(vertex)) continue;
    removeRelationships(vertex);
    this.nodes.push(vertex);
  }
  this.nodes.sort(function (a, b) { return a.properties.name < b.properties.name ? -1 : 1; });
  this.byName = {};
  this.byNodeType = {};
  this.byCapabilityType = {};
  for (let i = 0; i < this.nodes.length; i++) this.index(this.nodes[i]);
  this.counts = {};
  this.substituted = substitutedRequirements();
}

function removeRelationships(vertex) {
  let edges = [];
  for (let e = 0; e < vertex.edgesOut.size(); e++) {
    let edge = vertex.edgesOut[e];
    if (tosca.isTosca(edge, 'Relationship')) edges.push(edge);
  }
  for (let e = 0; e < edges.length; e++) edges[e].remove();
}

// index files a node template under its name, each of its types and each type of each of
// its capabilities; lists stay in name order, each node template once per list.
Topology.prototype.index = function (vertex) {
  let template = vertex.properties;
  this.byName[template.name] = vertex;
  for (let type in template.types) addOnce(this.byNodeType, type, vertex);
  for (let name in template.capabilities) {
    for (let type in template.capabilities[name].types) addOnce(this.byCapabilityType, type, vertex);
  }
};

function addOnce(index, key, vertex) {
  let list = index[key] || (index[key] = []);
  if (list[list.length - 1] !== vertex) list.push(vertex);
}

// substitutedRequirements are the requirements the substitution mappings expose: they are
// left for whatever the topology is substituted into.
function substitutedRequirements() {
  let substituted = {};
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isTosca(vertex, 'Substitution')) continue;
    for (let e = 0; e < vertex.edgesOut.size(); e++) {
      let edge = vertex.edgesOut[e];
      if (tosca.isTosca(edge, 'RequirementPointer')) substituted[nameKey(edge.target.properties.name, edge.properties.target)] = true;
    }
  }
  return substituted;
}

// count is how many relationships target the capability of a node template so far.
Topology.prototype.count = function (vertex, capability) {
  return this.counts[nameKey(vertex.properties.name, capability)] || 0;
};

// nodesFor are the node templates that can satisfy requirement, before filters: by the
// most selective index the requirement allows (by capability type only if byCapability).
Topology.prototype.nodesFor = function (requirement, byCapability) {
  if (requirement.nodeTemplateName !== '') {
    let vertex = this.byName[requirement.nodeTemplateName];
    return vertex ? [vertex] : [];
  }
  if (requirement.nodeTypeName !== '') return this.byNodeType[requirement.nodeTypeName] || [];
  if (byCapability && requirement.capabilityTypeName !== '') return this.byCapabilityType[requirement.capabilityTypeName] || [];
  return this.nodes;
};

// candidates are the capabilities that can take a relationship of requirement, in node
// template and capability name order.
Topology.prototype.candidates = function (source, requirement) {
  let nodes = this.nodesFor(requirement, true);
  let matched = [];
  for (let i = 0; i < nodes.length; i++) {
    let vertex = nodes[i];
    if (!nodeMatches(source, requirement, vertex.properties)) continue;
    let capabilities = vertex.properties.capabilities;
    let names = Object.keys(capabilities).sort();
    for (let c = 0; c < names.length; c++) {
      let capability = capabilities[names[c]];
      if (requirement.capabilityName !== '' && requirement.capabilityName !== names[c]) continue;
      if (requirement.capabilityTypeName !== '' && !(requirement.capabilityTypeName in capability.types)) continue;
      if (enforceOccurrences && capability.maxRelationshipCount !== -1 && this.count(vertex, names[c]) === capability.maxRelationshipCount) continue;
      matched.push({ vertex: vertex, name: names[c], capability: capability });
    }
  }
  return matched;
};

// anyNodeMatches is whether any node template passes the node part of requirement (name,
// type, filters), whatever its capabilities: what tells the two unsatisfied messages apart.
Topology.prototype.anyNodeMatches = function (source, requirement) {
  let nodes = this.nodesFor(requirement, false);
  for (let i = 0; i < nodes.length; i++) {
    if (nodeMatches(source, requirement, nodes[i].properties)) return true;
  }
  return false;
};

// nodeMatches applies a requirement's node template name, node type and node filter
// (properties of the node template and of its capabilities) to a candidate.
function nodeMatches(source, requirement, template) {
  if (requirement.nodeTemplateName !== '' && requirement.nodeTemplateName !== template.name) return false;
  if (requirement.nodeTypeName !== '' && !(requirement.nodeTypeName in template.types)) return false;
  let nodeValidators = requirement.nodeTemplatePropertyValidators;
  if (!isEmpty(nodeValidators) && !propertiesValid(source, template, nodeValidators)) return false;
  let capabilityValidators = requirement.capabilityPropertyValidators;
  if (isEmpty(capabilityValidators)) return true;
  for (let name in template.capabilities) {
    let capability = template.capabilities[name];
    let validators = capabilityValidators[name];
    if (validators === undefined) {
      for (let type in capability.types) {
        validators = capabilityValidators[type];
        if (validators !== undefined) break;
      }
    }
    if (validators !== undefined && !isEmpty(validators) && !propertiesValid(source, capability, validators)) return false;
  }
  return true;
}

// propertiesValid is whether every property a filter names exists on entity and passes
// the filter's constraints, evaluated in the context of the requiring node.
function propertiesValid(source, entity, validatorsByProperty) {
  for (let name in validatorsByProperty) {
    let value = entity.properties[name];
    if (value === undefined) return false;
    if (!clout.newValidators(validatorsByProperty[name], source, source, entity).isValid(value)) return false;
  }
  return true;
}

// choose picks among candidate capabilities: one still short of its minimum occurrences
// (the highest minimum first), else the one with the most room; the first wins a tie.
Topology.prototype.choose = function (candidates) {
  let chosen = null;
  for (let i = 0; i < candidates.length; i++) {
    let c = candidates[i];
    let min = c.capability.minRelationshipCount;
    if (min === 0 || this.count(c.vertex, c.name) >= min) continue;
    if (chosen === null || min > chosen.capability.minRelationshipCount) chosen = c;
  }
  if (chosen !== null) return chosen;
  for (let i = 0; i < candidates.length; i++) {
    let c = candidates[i];
    if (chosen === null || moreRoom(c.capability.maxRelationshipCount, chosen.capability.maxRelationshipCount)) chosen = c;
  }
  return chosen;
};

// moreRoom compares maximum occurrences, -1 being unbounded.
function moreRoom(a, b) {
  if (a === -1) return b !== -1;
  if (b === -1) return false;
  return a > b;
}

// resolve adds the relationship of one requirement of source, or reports why it cannot.
Topology.prototype.resolve = function (source, requirement) {
  if (this.substituted[nameKey(source.properties.name, requirement.name)]) return;
  let candidates = this.candidates(source, requirement);
  if (candidates.length === 0) {
    if (!this.anyNodeMatches(source, requirement)) return unsatisfied(requirement, 'there are no candidate node templates');
    return unsatisfied(requirement, 'no candidate node template provides required capability');
  }
  let chosen = this.choose(candidates);
  relate(source, requirement, chosen.vertex, chosen.name);
  let key = nameKey(chosen.vertex.properties.name, chosen.name);
  this.counts[key] = (this.counts[key] || 0) + 1;
};

// relate adds the relationship edge from source to the capability of target.
function relate(source, requirement, target, capability) {
  let edge = source.newEdgeTo(target);
  edge.metadata['puccini'] = { version: '1.0', kind: 'Relationship' };
  let relationship = requirement.relationship;
  edge.properties = {
    name: requirement.name,
    description: relationship ? relationship.description : '',
    types: relationship ? relationship.types : {},
    properties: relationship ? relationship.properties : {},
    attributes: relationship ? relationship.attributes : {},
    interfaces: relationship ? relationship.interfaces : {},
    capability: capability,
  };
}

// checkMinimums reports every capability left with fewer relationships than its minimum.
Topology.prototype.checkMinimums = function () {
  for (let i = 0; i < this.nodes.length; i++) {
    let vertex = this.nodes[i];
    for (let name in vertex.properties.capabilities) {
      let capability = vertex.properties.capabilities[name];
      let count = this.count(vertex, name);
      if (count < capability.minRelationshipCount) {
        report(capability.location, util.sprintf('not enough relationships: %d < %d', count, capability.minRelationshipCount));
      }
    }
  }
};

function unsatisfied(requirement, why) {
  report(requirement.location, util.sprintf('could not satisfy %q because %s', requirement.name, why));
}

function report(location, message) {
  problems.reportFull(11, 'Resolution', location.path, message, location.row, location.column);
}

// resolveAll resolves every requirement of every node template, in name order. While node
// filters are applied the values are coercible, so that filters can evaluate functions;
// without node filters the values are left as they are (turning every value of the
// topology into a coercible and back is most of the work of a resolution).
function resolveAll() {
  let topology = new Topology();
  let filtered = hasNodeFilters(topology.nodes);
  if (filtered) traversal.toCoercibles();
  for (let i = 0; i < topology.nodes.length; i++) {
    let vertex = topology.nodes[i];
    let requirements = vertex.properties.requirements;
    for (let r = 0; r < requirements.length; r++) topology.resolve(vertex, requirements[r]);
  }
  if (enforceOccurrences) topology.checkMinimums();
  if (filtered) traversal.unwrapCoercibles();
}

function hasNodeFilters(nodes) {
  for (let i = 0; i < nodes.length; i++) {
    let requirements = nodes[i].properties.requirements;
    for (let r = 0; r < requirements.length; r++) {
      let requirement = requirements[r];
      if (!isEmpty(requirement.nodeTemplatePropertyValidators) || !isEmpty(requirement.capabilityPropertyValidators)) return true;
    }
  }
  return false;
}

// isEmpty is whether a map (or list) of filters has no entry.
function isEmpty(filters) {
  for (let key in filters) return false;
  return true;
}

resolveAll();
