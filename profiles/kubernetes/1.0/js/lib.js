// calaf.lib: helpers shared by the renderers of the Calaf Kubernetes profile. Vendor
// renderers may require('calaf.lib') as well; its exports are a stable API (docs/profiles.md).

// isA tells whether a node, relationship or artifact view is of typeName or derives from it.
exports.isA = function (entity, typeName) {
  return !!entity && entity.types.indexOf(typeName) !== -1;
};

// targetsOf returns the targets of a node's relationships of typeName (or derived from it).
exports.targetsOf = function (node, typeName) {
  let targets = [];
  for (let r = 0; r < node.relationships.length; r++)
    if (exports.isA(node.relationships[r], typeName)) targets.push(node.relationships[r].target);
  return targets;
};

// envName turns a name into an environment variable name: "user-db" -> "USER_DB".
exports.envName = function (name) {
  return String(name).toUpperCase().replace(/[^A-Z0-9_]/g, '_');
};

// portName names a port as Kubernetes wants it (<= 15 characters, DNS label).
exports.portName = function (port) {
  if (port.name) return port.name;
  return (String(port.protocol || 'TCP').toLowerCase() + '-' + port.port).substring(0, 15);
};

// metadata returns the metadata of an object of node: its name, the node's labels and
// annotations, plus the selector labels that tie it to the Service and node.
exports.metadata = function (node, ctx, name) {
  let labels = {};
  let annotations = {};
  let extraLabels = node.properties.labels || {};
  for (let key in extraLabels) labels[key] = extraLabels[key];
  let selector = ctx.selector(node.name);
  for (let key in selector) labels[key] = selector[key];
  let extraAnnotations = node.properties.annotations || {};
  for (let key in extraAnnotations) annotations[key] = extraAnnotations[key];
  let metadata = { name: name || ctx.objectName(node.name), labels: labels };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  return metadata;
};

// endpointOf returns where a node is reachable in the cluster: the DNS name of its Service
// and the port of its endpoint capability (or its first port; for a calaf.nodes.Service
// without ports of its own, its workload's first port). A workload without a Service of its
// own (no ports, or expose: false) cannot be reached this way.
exports.endpointOf = function (target, ctx) {
  let ports = target.properties.ports || [];
  if (exports.isA(target, 'calaf.nodes.Service') && ports.length === 0) {
    for (let r = 0; r < target.relationships.length; r++)
      if (exports.isA(target.relationships[r], 'calaf.relationships.Exposes'))
        ports = target.relationships[r].target.properties.ports || [];
  }
  if (exports.isA(target, 'calaf.nodes.Workload') && !exports.isA(target, 'calaf.nodes.StatefulSet') &&
      (ports.length === 0 || !target.properties.expose))
    throw util.sprintf('%q has no Service to connect to: give it ports and expose: true, or connect to a calaf.nodes.Service exposing it', target.name);
  let port;
  let capability = target.capabilities.endpoint;
  if (capability && capability.properties.port !== undefined && capability.properties.port !== null)
    port = capability.properties.port;
  else if (ports.length > 0)
    port = ports[0].port;
  let protocol = (capability && capability.properties.protocol) || 'tcp';
  let host = ctx.objectName(target.name) + '.' + ctx.service.namespace + '.svc';
  return { host: host, port: port, protocol: protocol };
};

// connectionEnv returns the environment variables that connects_to relationships hand
// the node: <PREFIX>_HOST, <PREFIX>_PORT, <PREFIX>_URL.
exports.connectionEnv = function (node, ctx) {
  let env = [];
  for (let r = 0; r < node.relationships.length; r++) {
    let relationship = node.relationships[r];
    if (!exports.isA(relationship, 'calaf.relationships.ConnectsTo')) continue;
    let prefix = relationship.properties.env_prefix || exports.envName(relationship.target.name);
    let endpoint = exports.endpointOf(relationship.target, ctx);
    env.push({ name: prefix + '_HOST', value: endpoint.host });
    if (endpoint.port !== undefined) {
      env.push({ name: prefix + '_PORT', value: String(endpoint.port) });
      env.push({ name: prefix + '_URL', value: endpoint.protocol + '://' + endpoint.host + ':' + endpoint.port });
    }
  }
  return env;
};

// mounts returns the volumes and volume mounts of the node's mounts relationships.
exports.mounts = function (node, ctx) {
  let volumes = [];
  let volumeMounts = [];
  for (let r = 0; r < node.relationships.length; r++) {
    let relationship = node.relationships[r];
    if (!exports.isA(relationship, 'calaf.relationships.Mounts')) continue;
    let target = relationship.target;
    let volume = { name: ('m-' + target.name).toLowerCase().replace(/[^a-z0-9-]/g, '-').substring(0, 63) };
    let defaultPath = '/etc/' + target.name;
    if (exports.isA(target, 'calaf.nodes.ConfigMap'))
      volume.configMap = { name: ctx.objectName(target.name) };
    else if (exports.isA(target, 'calaf.nodes.Secret'))
      volume.secret = { secretName: ctx.objectName(target.name) };
    else if (exports.isA(target, 'calaf.nodes.Volume')) {
      volume.persistentVolumeClaim = { claimName: ctx.objectName(target.name) };
      defaultPath = '/data/' + target.name;
    } else
      throw util.sprintf('node %q mounts %q, which is not a ConfigMap, Secret or Volume', node.name, target.name);
    volumes.push(volume);
    let mount = { name: volume.name, mountPath: relationship.properties.path || defaultPath };
    if (relationship.properties.read_only) mount.readOnly = true;
    if (relationship.properties.sub_path) mount.subPath = relationship.properties.sub_path;
    volumeMounts.push(mount);
  }
  return { volumes: volumes, volumeMounts: volumeMounts };
};

function probe(spec, ports) {
  if (!spec) return undefined;
  let result = { periodSeconds: spec.period_seconds, initialDelaySeconds: spec.initial_delay_seconds };
  let port = spec.port !== undefined ? spec.port : ports.length > 0 ? ports[0].target_port || ports[0].port : undefined;
  if (spec.command && spec.command.length > 0) result.exec = { command: spec.command };
  else if (spec.http_path) result.httpGet = { path: spec.http_path, port: port };
  else if (port !== undefined) result.tcpSocket = { port: port };
  else throw 'a probe needs a command, an http_path or a port';
  return result;
}

// container returns the main container of a workload node.
exports.container = function (node, ctx) {
  let p = node.properties;
  let ports = p.ports || [];
  let container = { name: 'main', image: p.image, imagePullPolicy: p.image_pull_policy };
  if (p.command && p.command.length > 0) container.command = p.command;
  if (p.args && p.args.length > 0) container.args = p.args;
  let env = [];
  let names = Object.keys(p.env || {}).sort();
  for (let i = 0; i < names.length; i++) env.push({ name: names[i], value: String(p.env[names[i]]) });
  env = env.concat(exports.connectionEnv(node, ctx));
  if (env.length > 0) container.env = env;
  if (ports.length > 0)
    container.ports = ports.map(function (port) {
      return { name: exports.portName(port), containerPort: port.target_port || port.port, protocol: port.protocol };
    });
  if (p.resources) {
    let resources = {};
    if (p.resources.requests) resources.requests = p.resources.requests;
    if (p.resources.limits) resources.limits = p.resources.limits;
    container.resources = resources;
  }
  let readiness = probe(p.readiness_probe, ports);
  if (readiness) container.readinessProbe = readiness;
  let liveness = probe(p.liveness_probe, ports);
  if (liveness) container.livenessProbe = liveness;
  return container;
};

// podTemplate returns the pod template of a workload node, with extra volume mounts.
exports.podTemplate = function (node, ctx, extraMounts) {
  let container = exports.container(node, ctx);
  let mounts = exports.mounts(node, ctx);
  let volumeMounts = mounts.volumeMounts.concat(extraMounts || []);
  if (volumeMounts.length > 0) container.volumeMounts = volumeMounts;
  let spec = {
    containers: [container],
    terminationGracePeriodSeconds: node.properties.termination_grace_period_seconds,
  };
  if (mounts.volumes.length > 0) spec.volumes = mounts.volumes;
  if (node.properties.service_account) spec.serviceAccountName = node.properties.service_account;
  let metadata = exports.metadata(node, ctx);
  delete metadata.name;
  return { metadata: metadata, spec: spec };
};

// servicePorts converts Port values to Service ports.
exports.servicePorts = function (ports) {
  return ports.map(function (port) {
    let servicePort = { name: exports.portName(port), port: port.port, targetPort: port.target_port || port.port, protocol: port.protocol };
    if (port.node_port) servicePort.nodePort = port.node_port;
    return servicePort;
  });
};

// workloadService returns the Service that makes a workload reachable under the node's
// object name, or null when it has no ports or expose is false. A headless Service is
// always returned for StatefulSets, which need one.
exports.workloadService = function (node, ctx, headless) {
  let ports = node.properties.ports || [];
  if (!headless && (ports.length === 0 || !node.properties.expose)) return null;
  let spec = { selector: ctx.selector(node.name), ports: exports.servicePorts(ports) };
  if (headless) {
    spec.clusterIP = 'None';
    spec.publishNotReadyAddresses = true;
  }
  return { apiVersion: 'v1', kind: 'Service', metadata: exports.metadata(node, ctx), spec: spec };
};

// workloadResult assembles a workload's objects and the attributes read from them.
exports.workloadResult = function (node, ctx, workload, service) {
  let ref = workload.kind + '/' + workload.metadata.name;
  let attributes = {
    replicas: { object: ref, path: 'status.replicas', default: 0 },
    ready_replicas: { object: ref, path: 'status.readyReplicas', default: 0 },
  };
  let objects = [];
  if (service) {
    objects.push(service);
    if (service.spec.clusterIP !== 'None')
      attributes.cluster_ip = { object: 'Service/' + service.metadata.name, path: 'spec.clusterIP' };
  }
  objects.push(workload);
  return { objects: objects, attributes: attributes };
};
