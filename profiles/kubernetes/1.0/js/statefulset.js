// calaf.render.statefulset: a StatefulSet with its volume claim templates and the headless
// Service that gives its pods stable DNS names.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let claims = node.properties.volume_claims || [];
  let mounts = claims.map(function (claim) {
    return { name: claim.name, mountPath: claim.mount_path };
  });
  let templates = claims.map(function (claim) {
    let spec = { accessModes: claim.access_modes, resources: { requests: { storage: claim.size } } };
    if (claim.storage_class) spec.storageClassName = claim.storage_class;
    return { metadata: { name: claim.name }, spec: spec };
  });
  let name = ctx.objectName(node.name);
  let statefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: lib.metadata(node, ctx),
    spec: {
      serviceName: name,
      replicas: node.properties.replicas,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: ctx.selector(node.name) },
      template: lib.podTemplate(node, ctx, mounts),
    },
  };
  if (templates.length > 0) statefulSet.spec.volumeClaimTemplates = templates;
  return lib.workloadResult(node, ctx, statefulSet, lib.workloadService(node, ctx, true));
};
