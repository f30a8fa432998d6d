// SMF report: a Day-2 operation, run on demand in every SMF pod
// (`calaf run core smf Admin.report [-i verbose=true]`). It reads what configure wrote and
// reports it as an output of the run and as the attribute last_report.
const settings = calaf.exec(['grep', '-c', '=', '/tmp/smf-session.conf'], { check: true }).stdout.trim();
if (calaf.inputs.verbose) calaf.log(calaf.readFile('/tmp/smf-session.conf').trim());
calaf.appendFile('/tmp/smf-report.runs', 'report\n');
calaf.log('SMF in pod ' + calaf.pod.name + ': ' + settings + ' settings');
calaf.setOutput('settings', parseInt(settings, 10));
calaf.setAttribute('last_report', calaf.pod.name + ': ' + settings + ' settings');
