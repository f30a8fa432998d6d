// calaf.render.service: a Service of the requested type selecting the target workload.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let target = null;
  for (let r = 0; r < node.relationships.length; r++)
    if (lib.isA(node.relationships[r], 'calaf.relationships.Exposes')) target = node.relationships[r].target;
  if (!target) throw util.sprintf('service %q exposes no workload', node.name);
  let ports = node.properties.ports || target.properties.ports || [];
  if (ports.length === 0) throw util.sprintf('service %q has no ports and workload %q declares none', node.name, target.name);
  let service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: lib.metadata(node, ctx),
    spec: { type: node.properties.service_type, selector: ctx.selector(target.name), ports: lib.servicePorts(ports) },
  };
  let ref = 'Service/' + service.metadata.name;
  let attributes = { cluster_ip: { object: ref, path: 'spec.clusterIP' } };
  if (node.properties.service_type !== 'ClusterIP')
    attributes.node_ports = { object: ref, path: 'spec.ports', keyBy: 'name', valueOf: 'nodePort' };
  if (node.properties.service_type === 'LoadBalancer')
    attributes.load_balancer_address = {
      object: ref,
      path: ['status.loadBalancer.ingress[0].ip', 'status.loadBalancer.ingress[0].hostname'],
    };
  return { objects: [service], attributes: attributes };
};
