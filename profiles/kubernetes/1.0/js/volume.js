// calaf.render.volume: a PersistentVolumeClaim.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let spec = { accessModes: node.properties.access_modes, resources: { requests: { storage: node.properties.size } } };
  if (node.properties.storage_class) spec.storageClassName = node.properties.storage_class;
  let claim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: lib.metadata(node, ctx), spec: spec };
  return {
    objects: [claim],
    attributes: { phase: { object: 'PersistentVolumeClaim/' + claim.metadata.name, path: 'status.phase' } },
  };
};
