// calaf.render.job: a Job, healthy once it completed.
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let template = lib.podTemplate(node, ctx);
  template.spec.restartPolicy = 'Never';
  let spec = {
    completions: node.properties.completions,
    parallelism: node.properties.parallelism,
    backoffLimit: node.properties.backoff_limit,
    template: template,
  };
  if (node.properties.active_deadline_seconds) spec.activeDeadlineSeconds = node.properties.active_deadline_seconds;
  let job = { apiVersion: 'batch/v1', kind: 'Job', metadata: lib.metadata(node, ctx), spec: spec };
  let result = lib.workloadResult(node, ctx, job, lib.workloadService(node, ctx, false));
  let ref = 'Job/' + job.metadata.name;
  delete result.attributes.replicas;
  result.attributes.ready_replicas = { object: ref, path: 'status.ready', default: 0 };
  result.attributes.succeeded = { object: ref, path: 'status.succeeded', default: 0 };
  return result;
};
