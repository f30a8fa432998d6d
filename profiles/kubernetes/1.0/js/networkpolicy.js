// calaf.render.networkpolicy: ingress rules for pods of the Service, from the Service's
// own pods or from anywhere, never selecting another Service's pods.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let service = ctx.selector(node.name)['calaf.io/service'];
  let targets = lib.targetsOf(node, 'calaf.relationships.Selects');
  let podSelector = { matchLabels: { 'calaf.io/service': service } };
  if (targets.length === 1) podSelector = { matchLabels: ctx.selector(targets[0].name) };
  if (targets.length > 1)
    podSelector = {
      matchLabels: { 'calaf.io/service': service },
      matchExpressions: [{ key: 'calaf.io/node', operator: 'In', values: targets.map(function (t) { return ctx.selector(t.name)['calaf.io/node']; }) }],
    };
  let rule = {};
  if (node.properties.from === 'service') rule.from = [{ podSelector: { matchLabels: { 'calaf.io/service': service } } }];
  let ports = node.properties.ports || [];
  if (ports.length > 0)
    rule.ports = ports.map(function (port) {
      return { port: port.target_port || port.port, protocol: port.protocol || 'TCP' };
    });
  let policy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: lib.metadata(node, ctx),
    spec: { podSelector: podSelector, policyTypes: ['Ingress'], ingress: [rule] },
  };
  return { objects: [policy] };
};
