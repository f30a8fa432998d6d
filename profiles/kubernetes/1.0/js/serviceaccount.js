// calaf.render.serviceaccount: a ServiceAccount.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let account = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: lib.metadata(node, ctx),
    automountServiceAccountToken: node.properties.automount_token,
  };
  return { objects: [account] };
};
