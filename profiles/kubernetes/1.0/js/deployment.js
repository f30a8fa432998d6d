// calaf.render.deployment: a Deployment and, for its ports, a ClusterIP Service.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let selector = ctx.selector(node.name);
  let deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: lib.metadata(node, ctx),
    spec: {
      replicas: node.properties.replicas,
      selector: { matchLabels: selector },
      template: lib.podTemplate(node, ctx),
    },
  };
  return lib.workloadResult(node, ctx, deployment, lib.workloadService(node, ctx, false));
};
