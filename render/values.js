// calaf.values: evaluates every value of the topology (TOSCA functions, constraints,
// conversions) in place, as Puccini's traversal.coerce does, without building a path for
// every value (which nothing here reads, and which was most of the time a coerce took),
// and walking the topology in Go (clout.coerceValues, package tosca: a walk in JavaScript
// wrapped every Go map it passed through). A value that fails is reported as a problem
// and left as it was.

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
  clout.coerceValues();
  refusePollution();
};
