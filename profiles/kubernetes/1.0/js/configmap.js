// calaf.render.configmap: a ConfigMap from the data property and package files.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let data = {};
  let values = node.properties.data || {};
  for (let key in values) data[key] = String(values[key]);
  let files = node.properties.files || {};
  for (let key in files) data[key] = ctx.readFile(files[key]);
  return { objects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: lib.metadata(node, ctx), data: data }] };
};
