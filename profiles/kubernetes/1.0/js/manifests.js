// calaf.render.manifests: the Kubernetes objects of the node's calaf.artifacts.Manifest
// artifacts, as they are (Calaf adds its labels and the namespace).
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let objects = [];
  let names = Object.keys(node.artifacts).sort();
  for (let i = 0; i < names.length; i++) {
    let artifact = node.artifacts[names[i]];
    if (!lib.isA(artifact, 'calaf.artifacts.Manifest')) continue;
    let documents = ctx.parseYAML(ctx.readFile(artifact.file));
    for (let d = 0; d < documents.length; d++) if (documents[d]) objects.push(documents[d]);
  }
  return { objects: objects };
};
