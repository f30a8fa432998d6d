// acme.render.cache: renders an acme.nodes.Cache as the Calaf StatefulSet renders it, then
// adds the cache configuration (a ConfigMap, mounted into the container) and a
// PodDisruptionBudget. Everything else — names, labels, the headless Service, volume claims,
// connects_to environment, attribute mappings — comes from the Calaf profile.
const statefulset = require('calaf.render.statefulset');
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let result = statefulset.render(node, ctx);
  let name = ctx.objectName(node.name);
  let p = node.properties;

  let config = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: lib.metadata(node, ctx, name + '-config'),
    data: {
      'cache.conf': [
        'max_memory = ' + p.max_memory,
        'eviction = ' + p.eviction.policy,
        'ttl_seconds = ' + p.eviction.ttl_seconds,
        'replicas = ' + p.replicas,
        '',
      ].join('\n'),
    },
  };

  let statefulSet = null;
  for (let i = 0; i < result.objects.length; i++)
    if (result.objects[i].kind === 'StatefulSet') statefulSet = result.objects[i];
  if (!statefulSet) throw util.sprintf('cache %q: the StatefulSet renderer returned no StatefulSet', node.name);
  let pod = statefulSet.spec.template.spec;
  pod.volumes = (pod.volumes || []).concat([{ name: 'acme-config', configMap: { name: config.metadata.name } }]);
  let container = pod.containers[0];
  container.volumeMounts = (container.volumeMounts || []).concat([{ name: 'acme-config', mountPath: '/etc/acme', readOnly: true }]);

  let budget = {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: lib.metadata(node, ctx),
    spec: { minAvailable: p.min_available, selector: { matchLabels: ctx.selector(node.name) } },
  };

  // The configuration first: the StatefulSet's pods mount it.
  result.objects.unshift(config);
  result.objects.push(budget);
  result.attributes.disruptions_allowed = {
    object: 'PodDisruptionBudget/' + name,
    path: 'status.disruptionsAllowed',
    default: 0,
  };
  return result;
};
