// calaf.render.daemonset: a DaemonSet and, for its ports, a ClusterIP Service.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let daemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: lib.metadata(node, ctx),
    spec: {
      selector: { matchLabels: ctx.selector(node.name) },
      template: lib.podTemplate(node, ctx),
    },
  };
  let result = lib.workloadResult(node, ctx, daemonSet, lib.workloadService(node, ctx, false));
  let ref = 'DaemonSet/' + daemonSet.metadata.name;
  result.attributes.replicas = { object: ref, path: 'status.desiredNumberScheduled', default: 0 };
  result.attributes.ready_replicas = { object: ref, path: 'status.numberReady', default: 0 };
  return result;
};
