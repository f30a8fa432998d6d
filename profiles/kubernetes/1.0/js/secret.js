// calaf.render.secret: a Secret from the data property and package files.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let data = {};
  let values = node.properties.data || {};
  for (let key in values) data[key] = String(values[key]);
  let files = node.properties.files || {};
  for (let key in files) data[key] = ctx.readFile(files[key]);
  let secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: lib.metadata(node, ctx),
    type: node.properties.secret_type,
    stringData: data,
  };
  return { objects: [secret] };
};
