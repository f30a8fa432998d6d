// SMF configure: runs inside every SMF pod (Calaf brings the JavaScript runtime; the image
// has none). It writes the session configuration, checks it with the container's own
// tools, and reports the registration back as TOSCA attributes.
const conf = [
  'plmn=' + calaf.inputs.plmn,
  'dnn=' + calaf.inputs.dnn,
  'nrf=' + calaf.inputs.nrf_url,
].join('\n') + '\n';
calaf.writeFile('/tmp/smf-session.conf', conf);

const check = calaf.exec(['sh', '-c', 'grep -c = /tmp/smf-session.conf']);
if (check.exitCode !== 0) throw new Error('configuration check failed: ' + check.stderr);

calaf.log('SMF in pod ' + calaf.pod.name + ' configured for ' + calaf.inputs.dnn);
calaf.setAttribute('registered_peers', parseInt(check.stdout.trim(), 10));
calaf.setAttribute('registration', 'registered with ' + calaf.inputs.nrf_url + ' for ' + calaf.inputs.dnn);
