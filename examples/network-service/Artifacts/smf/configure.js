// SMF configure: runs inside every SMF pod (Calaf brings the JavaScript runtime; the image
// has none), once per change of this file, its inputs or the package. It writes the session
// configuration, checks it with the container's own tools, and reports the registration
// back as TOSCA attributes (the output smf_registration reads one).
const conf = [
  'plmn=' + calaf.inputs.plmn,
  'dnn=' + calaf.inputs.dnn,
  'nrf=' + calaf.inputs.nrf_url,
].join('\n') + '\n';
calaf.writeFile('/tmp/smf-session.conf', conf);

const check = calaf.exec(['sh', '-c', 'grep -c = /tmp/smf-session.conf']);
if (check.exitCode !== 0) throw new Error('configuration check failed: ' + check.stderr);

// One line per run in this pod: Calaf runs configure once per pod and change, never on a resync.
calaf.appendFile('/tmp/smf-configure.runs', calaf.service.revision + '\n');

calaf.log('SMF in pod ' + calaf.pod.name + ' configured for ' + calaf.inputs.dnn);
calaf.setAttribute('registered_peers', parseInt(check.stdout.trim(), 10));
calaf.setAttribute('registration', 'registered with ' + calaf.inputs.nrf_url + ' for ' + calaf.inputs.dnn);
