// calaf.driver: resolves requirements, coerces values, and returns every node template as
// plain data, with the renderer its type names in "calaf.render" metadata and the views
// the renderers get (package render runs each renderer in a realm of its own: calaf.realm).
// Run by package render in the tosca sandbox; returns plain data, prints nothing.
const traversal = require('tosca.lib.traversal');
const tosca = require('tosca.lib.utils');
const values = require('calaf.values');

const realm = require('calaf.realm');
const plain = realm.plain;
const errorMessage = realm.errorMessage;

// typeChain returns a type hierarchy as names, most derived first (calafDriver: in Go).
function typeChain(types) {
  return calafDriver.typeChain(types);
}

function artifactView(artifact, root) {
  let types = typeChain(artifact.types || {});
  let file = artifact.sourcePath || '';
  if (root && file.indexOf(root) === 0) file = file.substring(root.length);
  else if (file.indexOf('file://' + root) === 0) file = file.substring(root.length + 7);
  return {
    type: types[0],
    types: types,
    file: file,
    repository: artifact.repositoryUrl || undefined,
    properties: plain(artifact.properties || {}),
  };
}

function nodeView(vertex, root) {
  let template = vertex.properties;
  let types = typeChain(template.types);
  let capabilities = {};
  for (let name in template.capabilities) {
    let capability = template.capabilities[name];
    capabilities[name] = {
      types: typeChain(capability.types),
      properties: plain(capability.properties),
      attributes: plain(capability.attributes),
    };
  }
  let artifacts = {};
  for (let name in template.artifacts) artifacts[name] = artifactView(template.artifacts[name], root);
  return {
    name: template.name,
    type: types[0],
    types: types,
    typeMetadata: calafDriver.typeMetadata(template.types, types),
    metadata: plain(template.metadata || {}),
    properties: plain(template.properties),
    attributes: plain(template.attributes),
    capabilities: capabilities,
    artifacts: artifacts,
    relationships: [],
  };
}

function operationsOf(template, detached) {
  let operations = [];
  let implemented = calafDriver.implementedOperations(template.interfaces);
  for (let i = 0; i < implemented.length; i++) {
    let interfaceName = implemented[i][0];
    let operationName = implemented[i][1];
    let interface_ = template.interfaces[interfaceName];
    let operation = interface_.operations[operationName];
    let interfaceTypes = typeChain(interface_.types || {});
    let declared = detached.interfaces[interfaceName];
    let inputs = {};
    let errors = coerceInputs(detached.vertex, declared.inputs, inputs)
      .concat(coerceInputs(detached.vertex, declared.operations[operationName], inputs));
    let inputsError = errors.join('; ');
    operations.push({
      interface: interfaceName,
      interfaceType: interfaceTypes[0],
      interfaceTypes: interfaceTypes,
      name: operationName,
      implementation: operation.implementation,
      dependencies: plain(operation.dependencies || []),
      timeout: operation.timeout,
      inputs: inputs,
      inputsError: inputsError,
    });
  }
  return operations;
}

// coerceOutputs evaluates each output on its own: an output that cannot be evaluated yet
// (typically a get_attribute of an attribute not observed yet) gets an error message
// instead of failing the render.
function coerceOutputs(declared) {
  let outputs = {};
  let errors = {};
  for (let name in declared) {
    try {
      let coercible = clout.newCoercible(declared[name]);
      outputs[name] = plain(clout.coerce(coercible));
    } catch (x) {
      errors[name] = errorMessage(x);
    }
  }
  return { outputs: outputs, errors: errors };
}

// detachOperationInputs takes the inputs of every interface and operation out of the node
// templates, so that coercing the Clout does not evaluate them: they are evaluated when
// the operation runs, once the attributes they read have been observed (calafDriver: in
// Go).
function detachOperationInputs() {
  return calafDriver.detachOperationInputs(clout.vertexes);
}

// coerceInputs evaluates detached inputs in the context of their node, in name order,
// and returns a message for each input that cannot be evaluated yet (typically one that
// reads an attribute not observed yet); the others are evaluated all the same.
function coerceInputs(vertex, declared, into) {
  let errors = [];
  let names = Object.keys(declared || {}).sort();
  for (let i = 0; i < names.length; i++) {
    let name = names[i];
    try {
      into[name] = plain(clout.coerce(clout.newCoercible(declared[name], vertex)));
    } catch (x) {
      errors.push(name + ': ' + errorMessage(x));
    }
  }
  return errors;
}

// requireObservedAttributes makes get_attribute fail on an attribute that has no value yet,
// instead of returning null: outputs and operation inputs (evaluated after this) then say
// which attribute they wait for. Properties, coerced before, keep TOSCA's null.
function requireObservedAttributes() {
  let getAttribute;
  try {
    getAttribute = require('tosca.function.get_attribute');
  } catch (x) {
    return; // not a TOSCA Clout with Puccini's functions
  }
  let evaluate = getAttribute.evaluate;
  getAttribute.evaluate = function () {
    let value = evaluate.apply(this, arguments);
    if (value === null || value === undefined) {
      let path = [];
      for (let i = 0; i < arguments.length; i++) path.push(String(arguments[i]));
      throw util.sprintf('attribute %s has no value yet (it is observed once the node is deployed)', path.join('.'));
    }
    return value;
  };
}

// indexNodeTemplates makes the TOSCA functions that name a node template (get_property,
// get_attribute, get_artifact) find it in an index built once, instead of scanning every
// vertex of the topology for every call; SELF, SOURCE, TARGET, HOST and unknown names
// take Puccini's own way (and its error).
function indexNodeTemplates() {
  let lookup = tosca.getModelableEntity;
  let byName = null;
  tosca.getModelableEntity = function (entity) {
    if (entity === 'SELF' || entity === 'SOURCE' || entity === 'TARGET' || entity === 'HOST') return lookup.call(this, entity);
    if (byName === null) {
      byName = Object.create(null);
      for (let id in clout.vertexes) {
        let vertex = clout.vertexes[id];
        if (tosca.isNodeTemplate(vertex)) byName[vertex.properties.name] = vertex;
      }
    }
    let vertex = typeof entity === 'string' ? byName[entity] : undefined;
    return vertex !== undefined ? vertex : lookup.call(this, entity);
  };
}

exports.run = function (params) {
  require('calaf.resolve');
  if (calafDriver.blocked()) return { nodes: [], outputs: {}, outputErrors: {} };
  indexNodeTemplates();
  let declaredOutputs = {};
  if (tosca.isTosca(clout)) {
    declaredOutputs = clout.properties.tosca.outputs;
    clout.properties.tosca.outputs = {};
  }
  let operationInputs = detachOperationInputs();
  values.coerce();
  // Values that failed to coerce were reported as problems and are still unevaluated (a
  // tolerated idiom of a SOL001 flavour does not stop the run).
  if (calafDriver.blocked()) return { nodes: [], outputs: {}, outputErrors: {} };
  requireObservedAttributes();

  let root = params.root;
  let vertexes = [];
  let views = {};
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isNodeTemplate(vertex)) continue;
    vertexes.push(vertex);
    try {
      views[vertex.properties.name] = nodeView(vertex, root);
    } catch (x) {
      throw util.sprintf('node %q: %s', vertex.properties.name, errorMessage(x));
    }
  }
  vertexes.sort(function (a, b) { return a.properties.name < b.properties.name ? -1 : 1; });

  let nodes = [];
  for (let v = 0; v < vertexes.length; v++) {
    let vertex = vertexes[v];
    let view = views[vertex.properties.name];
    for (let e = 0; e < vertex.edgesOut.size(); e++) {
      let edge = vertex.edgesOut[e];
      if (!tosca.isTosca(edge, 'Relationship')) continue;
      let relationship = edge.properties;
      let types = typeChain(relationship.types);
      view.relationships.push({
        requirement: relationship.name,
        type: types[0],
        types: types,
        capability: relationship.capability,
        properties: plain(relationship.properties),
        attributes: plain(relationship.attributes),
        target: views[edge.target.properties.name],
      });
    }
  }

  for (let v = 0; v < vertexes.length; v++) {
    let vertex = vertexes[v];
    let view = views[vertex.properties.name];
    nodes.push({
      name: view.name,
      type: view.type,
      types: view.types,
      renderer: view.typeMetadata['calaf.render'] || '',
      properties: view.properties,
      objects: [],
      attributes: {},
      relationships: view.relationships.map(function (r) {
        return { requirement: r.requirement, type: r.type, types: r.types, target: r.target.name };
      }),
      operations: operationsOf(vertex.properties, operationInputs[view.name]),
      artifacts: view.artifacts,
    });
  }

  let outputs = coerceOutputs(declaredOutputs);
  return {
    nodes: nodes, outputs: outputs.outputs, outputErrors: outputs.errors,
    policies: policiesOf(), occurrences: occurrenceShortfalls(),
    views: params.render ? viewsJSON(views) : {},
  };
};

// viewsJSON is every node's view as JSON text of its own, by node name, relationship
// targets by name: a node's realm parses only the views its renderer reads (package render
// renders every node in a realm of its own).
function viewsJSON(views) {
  let texts = {};
  for (let name in views) {
    let copy = Object.assign({}, views[name]);
    copy.relationships = views[name].relationships.map(function (r) {
      return Object.assign({}, r, { target: r.target.name });
    });
    texts[name] = JSON.stringify(copy);
  }
  return texts;
}

// policiesOf returns every policy with its evaluated properties and its target nodes.
function policiesOf() {
  let policies = [];
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isTosca(vertex, 'Policy')) continue;
    let targets = [];
    for (let e = 0; e < vertex.edgesOut.size(); e++) {
      let edge = vertex.edgesOut[e];
      if (tosca.isTosca(edge, 'NodeTemplateTarget')) targets.push(edge.target.properties.name);
    }
    targets.sort();
    policies.push({
      name: vertex.properties.name,
      types: typeChain(vertex.properties.types),
      properties: plain(vertex.properties.properties),
      targets: targets,
    });
  }
  policies.sort(function (a, b) { return a.name < b.name ? -1 : 1; });
  return policies;
}

// occurrenceShortfalls lists the capabilities that have fewer incoming relationships than
// their minimum occurrences, when the compile tolerated them (the quirk
// capabilities.occurrences.permissive): Calaf reports them as warnings.
function occurrenceShortfalls() {
  if (!traversal.hasQuirk(clout, 'capabilities.occurrences.permissive')) return [];
  let counts = {};
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    for (let e = 0; e < vertex.edgesOut.size(); e++) {
      let edge = vertex.edgesOut[e];
      if (!tosca.isTosca(edge, 'Relationship')) continue;
      let key = edge.target.properties.name + '/' + edge.properties.capability;
      counts[key] = (counts[key] || 0) + 1;
    }
  }
  let shortfalls = [];
  for (let id in clout.vertexes) {
    let vertex = clout.vertexes[id];
    if (!tosca.isNodeTemplate(vertex)) continue;
    let capabilities = vertex.properties.capabilities;
    for (let name in capabilities) {
      let count = counts[vertex.properties.name + '/' + name] || 0;
      let min = capabilities[name].minRelationshipCount || 0;
      if (count < min) shortfalls.push({ node: vertex.properties.name, capability: name, count: count, min: min });
    }
  }
  shortfalls.sort(function (a, b) { return (a.node + '/' + a.capability) < (b.node + '/' + b.capability) ? -1 : 1; });
  return shortfalls;
}

// evaluate only resolves requirements and, with params.coerce, evaluates functions; the
// caller reads the Clout afterwards.
exports.evaluate = function (params) {
  require('calaf.resolve');
  indexNodeTemplates();
  if (params.coerce) values.coerce();
};
