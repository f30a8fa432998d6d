// calaf.realm: renders one node template in a JavaScript realm of its own. Package render
// runs it in a fresh runtime per node, with the views of every node as JSON text parsed
// here: what a renderer does to its realm (its prototypes, globals, modules, the views) no
// other node's renderer sees. Returns plain data, prints nothing.

// plain copies a value out of Go wrappers into plain JavaScript data: own properties only,
// so that nothing inherited (a polluted prototype) is copied.
function plain(value, depth) {
  depth = depth || 0;
  if (depth > 100) throw 'value nested more than 100 levels deep (does it contain itself?)';
  if (value === null || value === undefined) return value;
  let kind = Object.prototype.toString.call(value);
  if (kind === '[object String]' || kind === '[object Number]' || kind === '[object Boolean]') return value.valueOf();
  if (typeof value !== 'object') return value;
  if (kind === '[object Date]') return value.toISOString();
  if (kind === '[object Array]') {
    let list = [];
    for (let i = 0; i < value.length; i++) list.push(plain(value[i], depth + 1));
    return list;
  }
  let object = {};
  let keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) {
    Object.defineProperty(object, keys[i], { value: plain(value[keys[i]], depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return object;
}

// errorMessage describes what a scriptlet threw: a string, an Error, a Go error.
function errorMessage(x) {
  if (x && x.value && x.value.error) return String(x.value.error());
  return String(x);
}

exports.plain = plain;
exports.errorMessage = errorMessage;

// render runs the renderer of params.node: params.views is every node's view as JSON, with
// relationship targets by name.
exports.render = function (params) {
  let views = JSON.parse(params.views);
  for (let name in views) {
    let relationships = views[name].relationships;
    for (let i = 0; i < relationships.length; i++) relationships[i].target = views[relationships[i].target];
  }
  let view = views[params.node];
  let ctx = {
    service: { name: params.service, namespace: params.namespace },
    objectName: function (nodeName) { return calaf.objectName(params.service, nodeName); },
    selector: function (nodeName) {
      return { 'calaf.io/service': params.service, 'calaf.io/node': calaf.labelValue(nodeName) };
    },
    readFile: function (path) { return calaf.readFile(path); },
    parseYAML: function (text) { return calaf.parseYaml(text); },
    nodes: views,
  };
  try {
    let rendered = require(params.renderer).render(view, ctx);
    if (Array.isArray(rendered)) rendered = { objects: rendered };
    if (!rendered) return { objects: [], attributes: {} };
    // Copied as plain data, so that Go receives no cycles.
    return { objects: plain(rendered.objects || []), attributes: plain(rendered.attributes || {}) };
  } catch (x) {
    throw util.sprintf('node %q: renderer %s: %s', params.node, params.renderer, errorMessage(x));
  }
};
