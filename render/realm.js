// calaf.realm: renders one node template in a JavaScript realm of its own. Package render
// runs it in a fresh runtime per node, with the views of every node as JSON text parsed
// here: what a renderer does to its realm (its prototypes, globals, modules, the views) no
// other node's renderer sees. Returns plain data, prints nothing.

// defineProperty is taken before any renderer runs: one that replaces Object.defineProperty
// cannot break the copies of what it returns, nor keep its reads of attributes unseen.
const defineProperty = Object.defineProperty;

// plain copies a value out of Go wrappers into plain JavaScript data: own properties only,
// so that nothing inherited (a polluted prototype) is copied. A key the new object
// inherits (__proto__, or a setter a scriptlet put on Object.prototype) is defined as an
// own property, so that no setter sees the value; any other key is assigned, which makes
// the same own property at a fraction of the cost.
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
    let key = keys[i];
    let copy = plain(value[key], depth + 1);
    if (key in object) defineProperty(object, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else object[key] = copy;
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

// watchAttributes makes the attributes of a view, of its capabilities and of its
// relationships call onRead when they are first read (or enumerated, copied, stringified):
// a renderer that never reads them renders the same for any attribute values.
function watchAttributes(v, onRead) {
  function watch(holder) {
    if (!holder || typeof holder !== 'object' || !('attributes' in holder)) return;
    let value = holder.attributes;
    defineProperty(holder, 'attributes', {
      get: function () { onRead(); return value; },
      set: function (next) { onRead(); value = next; },
      enumerable: true, configurable: true,
    });
  }
  watch(v);
  let capabilities = v.capabilities || {};
  for (let name in capabilities) watch(capabilities[name]);
  let relationships = v.relationships || [];
  for (let i = 0; i < relationships.length; i++) watch(relationships[i]);
}

// lazyViews is every node's view by name, parsed from its JSON text when first read
// (texts: node name → JSON), relationship targets by name resolved the same way: a realm
// costs what its renderer reads, not the size of the topology. Views a renderer replaces,
// adds or deletes are its realm's own. onRead is called when a renderer reads attributes.
function lazyViews(texts, onRead) {
  let parsed = Object.create(null);
  let removed = Object.create(null);
  let names = null;
  function view(name) {
    if (removed[name] || typeof name !== 'string') return undefined;
    if (name in parsed) return parsed[name];
    let text = texts[name];
    if (typeof text !== 'string') return undefined;
    let v = JSON.parse(text);
    watchAttributes(v, onRead);
    parsed[name] = v;
    let relationships = v.relationships || [];
    for (let i = 0; i < relationships.length; i++) linkTarget(relationships[i]);
    return v;
  }
  function linkTarget(relationship) {
    let target = relationship.target;
    defineProperty(relationship, 'target', {
      get: function () { return view(target); },
      set: function (value) { defineProperty(relationship, 'target', { value: value, enumerable: true, writable: true, configurable: true }); },
      enumerable: true, configurable: true,
    });
  }
  function keys() {
    if (names === null) names = Object.keys(texts).sort();
    let own = names.filter(function (name) { return !removed[name]; });
    for (let name in parsed) if (!Object.prototype.hasOwnProperty.call(texts, name) && !removed[name]) own.push(name);
    return own;
  }
  return new Proxy({}, {
    get: function (_, name) { return view(name); },
    has: function (_, name) { return view(name) !== undefined; },
    set: function (_, name, value) { delete removed[name]; parsed[name] = value; return true; },
    deleteProperty: function (_, name) { removed[name] = true; return true; },
    ownKeys: function () { return keys(); },
    getOwnPropertyDescriptor: function (_, name) {
      let v = view(name);
      return v === undefined ? undefined : { value: v, enumerable: true, writable: true, configurable: true };
    },
  });
}

// shorten cuts a name to 80 characters, as diagnostics echo names.
function shorten(name) {
  return name.length > 80 ? name.slice(0, 79) + '…' : name;
}

// describe names a value a renderer returned, in JavaScript's words, echoing at most 60
// characters of it.
function describe(value) {
  if (value === undefined || value === null) return String(value);
  if (Array.isArray(value)) return 'a list';
  let kind = Object.prototype.toString.call(value);
  if (kind === '[object String]') {
    let text = String(value);
    return 'the string ' + JSON.stringify(text.length > 60 ? text.slice(0, 59) + '…' : text);
  }
  if (kind === '[object Number]' || kind === '[object Boolean]') return 'the ' + (kind === '[object Number]' ? 'number ' : 'boolean ') + String(value);
  if (typeof value === 'function') return 'a function';
  if (kind === '[object Object]') return 'an object';
  return 'a ' + kind.slice(8, -1);
}

// isMap tells a plain object (a map of names) from lists, functions and the other objects.
function isMap(value) {
  return value !== null && typeof value === 'object' && Object.prototype.toString.call(value) === '[object Object]';
}

// contract checks what a renderer returned against the renderer contract
// (docs/profiles.md): { objects: [...], attributes: {...} }, both optional, or a list of
// objects; it returns that result with both members.
function contract(rendered) {
  const expected = 'not { objects: [...], attributes: {...} } nor a list of objects (the renderer contract, docs/profiles.md)';
  if (Array.isArray(rendered)) return { objects: rendered, attributes: {} };
  if (!isMap(rendered)) throw 'returned ' + describe(rendered) + ', ' + expected;
  let keys = Object.keys(rendered);
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== 'objects' && keys[i] !== 'attributes') {
      throw 'returned an object with the member ' + describe(keys[i]).replace('the string ', '') + ': a result has objects and attributes only';
    }
  }
  let objects = rendered.objects === undefined ? [] : rendered.objects;
  let attributes = rendered.attributes === undefined ? {} : rendered.attributes;
  if (!Array.isArray(objects)) throw 'returned objects that are ' + describe(objects) + ', not a list of objects';
  if (!isMap(attributes)) throw 'returned attributes that are ' + describe(attributes) + ', not a map of attribute names to mappings';
  return { objects: objects, attributes: attributes };
}

// render runs the renderer of params.node: params.views is every node's view as JSON text
// by name, with relationship targets by name.
exports.render = function (params) {
  let readsAttributes = false;
  let views = lazyViews(params.views, function () { readsAttributes = true; });
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
    let rendered = contract(require(params.renderer).render(view, ctx));
    // Copied as plain data, so that Go receives no cycles; what is copied may read the
    // views' attributes, so readsAttributes is taken last.
    let objects = plain(rendered.objects);
    let attributes = plain(rendered.attributes);
    return { objects: objects, attributes: attributes, readsAttributes: readsAttributes };
  } catch (x) {
    throw util.sprintf('node %q: renderer %s: %s', shorten(params.node), params.renderer, errorMessage(x));
  }
};
