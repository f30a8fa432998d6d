// calaf.values: evaluates every value of the topology (TOSCA functions, constraints,
// conversions) in place, as Puccini's traversal.coerce does, without building a path for
// every value (which nothing here reads, and which was most of the time a coerce took).
// Two passes, as there: every value becomes a coercible first, so that a function reading
// another value (get_property, get_attribute) finds it coercible wherever it is; then
// each is coerced. A value that fails is reported as a problem and left as it was.
const tosca = require('tosca.lib.utils');

// keysOf are the own keys of a map of the topology: what a function may have added to
// Object.prototype is none of its entries.
function keysOf(map) {
  return map === undefined || map === null ? [] : Object.keys(map);
}

// eachValues calls visit(holder, site, source, target) for every map of values in the
// topology, with the context its functions are evaluated in: the inputs and outputs, and
// of every node template, relationship, group, policy and substitution the properties,
// attributes, interface and operation inputs, operation and notification outputs,
// capabilities, artifacts (and an artifact's credential).
function eachValues(visit) {
  if (tosca.isTosca(clout)) {
    visit(clout.properties.tosca.inputs);
    visit(clout.properties.tosca.outputs);
  }
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isTosca(vertex)) continue;
    let entity = vertex.properties;
    if (tosca.isNodeTemplate(vertex)) nodeTemplateValues(vertex, visit);
    else if (tosca.isTosca(vertex, 'Group')) {
      visit(entity.properties, vertex);
      interfaceValues(entity.interfaces, visit, vertex);
    } else if (tosca.isTosca(vertex, 'Policy') || tosca.isTosca(vertex, 'Substitution')) {
      visit(entity.properties, vertex);
    }
  }
}

function nodeTemplateValues(vertex, visit) {
  let template = vertex.properties;
  visit(template.properties, vertex);
  visit(template.attributes, vertex);
  interfaceValues(template.interfaces, visit, vertex);
  let capabilities = keysOf(template.capabilities);
  for (let i = 0; i < capabilities.length; i++) {
    visit(template.capabilities[capabilities[i]].properties, vertex);
    visit(template.capabilities[capabilities[i]].attributes, vertex);
  }
  let artifacts = keysOf(template.artifacts);
  for (let i = 0; i < artifacts.length; i++) {
    let artifact = template.artifacts[artifacts[i]];
    visit(artifact.properties, vertex);
    if (artifact.credential !== null) visit(artifact, vertex, undefined, undefined, 'credential');
  }
  for (let e = 0; e < vertex.edgesOut.size(); e++) {
    let edge = vertex.edgesOut[e];
    if (!tosca.isTosca(edge, 'Relationship')) continue;
    let relationship = edge.properties;
    visit(relationship.properties, edge, vertex, edge.target);
    visit(relationship.attributes, edge, vertex, edge.target);
    interfaceValues(relationship.interfaces, visit, edge, vertex, edge.target);
  }
}

function interfaceValues(interfaces, visit, site, source, target) {
  let names = keysOf(interfaces);
  for (let i = 0; i < names.length; i++) {
    let interface_ = interfaces[names[i]];
    visit(interface_.inputs, site, source, target);
    let operations = keysOf(interface_.operations);
    for (let o = 0; o < operations.length; o++) {
      visit(interface_.operations[operations[o]].inputs, site, source, target);
      visit(interface_.operations[operations[o]].outputs, site, source, target);
    }
    let notifications = keysOf(interface_.notifications);
    for (let n = 0; n < notifications.length; n++) {
      visit(interface_.notifications[notifications[n]].outputs, site, source, target);
    }
  }
}

// replacer returns a visit that replaces each value of a holder (or only its key) by
// change(value, site, source, target); a Go error thrown is reported as a problem.
function replacer(change) {
  return function (holder, site, source, target, only) {
    if (holder === undefined || holder === null) return;
    let replace = function (key) {
      try {
        holder[key] = change(holder[key], site, source, target);
      } catch (x) {
        if (x && x.value && x.value.error) problems.reportError(x.value);
        else throw x;
      }
    };
    if (only !== undefined) return replace(only);
    let keys = keysOf(holder);
    for (let i = 0; i < keys.length; i++) replace(keys[i]);
  };
}

// builtIns are the prototypes whose enumerable properties every for-in loop would see.
const builtIns = { 'Object.prototype': Object.prototype, 'Array.prototype': Array.prototype,
  'Function.prototype': Function.prototype, 'String.prototype': String.prototype };

// refusePollution throws if a function added enumerable properties to a built-in prototype:
// the rest of the work in this realm would see them in every object it walks.
function refusePollution() {
  for (let name in builtIns) {
    let added = Object.keys(builtIns[name]);
    if (added.length !== 0) throw util.sprintf('a TOSCA function added %s to %s: scriptlets may not change JavaScript\'s built-in prototypes', added.join(', '), name);
  }
}

// coerce evaluates every value of the topology in place, and refuses a topology whose
// functions changed the built-in prototypes.
exports.coerce = function () {
  eachValues(replacer(function (value, site, source, target) {
    return clout.newCoercible(value, site, source, target);
  }));
  eachValues(replacer(function (value) {
    return clout.coerce(value);
  }));
  refusePollution();
};
