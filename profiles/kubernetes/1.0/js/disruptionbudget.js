// calaf.render.disruptionbudget: a PodDisruptionBudget for the pods of one workload of the
// Service, named and selecting like the Service's own objects.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let targets = lib.targetsOf(node, 'calaf.relationships.Selects');
  if (targets.length !== 1) throw util.sprintf('disruption budget %q must select one workload', node.name);
  let spec = { selector: { matchLabels: ctx.selector(targets[0].name) } };
  let props = node.properties;
  if (props.min_available !== undefined && props.min_available !== null) spec.minAvailable = props.min_available;
  else spec.maxUnavailable = props.max_unavailable !== undefined && props.max_unavailable !== null ? props.max_unavailable : 1;
  return {
    objects: [{ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: lib.metadata(node, ctx), spec: spec }],
  };
};
