package lifecycle

import (
	"calaf.io/calaf/api/v1alpha1"
)

// plan returns the stages of an occurrence, or of its rollback. The hooks of the _start
// stages run only in nodes that are ready (a broken node is what a heal is for); those of
// the _end stages wait for the node. The occurrences that report the pods they changed
// (status.affectedPods) first record the pods the Service runs.
func plan(op *v1alpha1.Operation, rollback bool) []stage {
	if rollback {
		return []stage{hooks("rollback_start", skipUnready), one(restoreStep), hooks("rollback_end", waitReady)}
	}
	switch op.Spec.Type {
	case v1alpha1.OperationInstantiate:
		return []stage{
			one(recordPodsStep), one(snapshotStep), one(instantiateStartStep), one(changeStep(applyInstantiate)), hooks("instantiate_end", waitReady),
		}
	case v1alpha1.OperationScale:
		return reporting(changePlan("scale", onSpec(applyScale)))
	case v1alpha1.OperationScaleToLevel:
		return reporting(changePlan("scale_to_level", onSpec(applyScaleToLevel)))
	case v1alpha1.OperationChangeFlavour:
		return reporting(changePlan("change_flavour", onSpec(applyChangeFlavour)))
	case v1alpha1.OperationChangePackage:
		return reporting(changePlan("change_current_package", onSpec(applyChangePackage)))
	case v1alpha1.OperationModify:
		return changePlan("modify_information", applyModify)
	case v1alpha1.OperationOperate:
		return reporting(changePlan("operate", onSpec(applyOperate)))
	case v1alpha1.OperationHeal:
		return []stage{
			one(recordPodsStep), one(selectPodsStep), hooks("heal_start", skipUnready), one(recreatePodsStep), one(replacedStep),
			hooks("heal", waitReady), hooks("heal_end", waitReady),
		}
	case v1alpha1.OperationTerminate:
		if keepsInstance(op) {
			return []stage{one(recordPodsStep), terminateHooks, one(tearDownStep)}
		}
		return []stage{one(recordPodsStep), terminateHooks, one(deleteServiceStep), one(goneStep)}
	}
	return []stage{one(customStep)}
}

// changePlan is the plan of an occurrence that changes the Service: what the Service
// runs is recorded (for a rollback), the _start hooks run, the Service changes and is
// waited for until healthy, the _end hooks run.
func changePlan(hook string, apply func(*run, *v1alpha1.Service) error) []stage {
	return []stage{
		one(snapshotStep), hooks(hook+"_start", skipUnready), one(changeStep(apply)), hooks(hook+"_end", waitReady),
	}
}

// reporting puts the record of the pods the Service runs before a plan.
func reporting(stages []stage) []stage {
	return append([]stage{one(recordPodsStep)}, stages...)
}

// onSpec makes a change of a Service's spec a change of the Service.
func onSpec(apply func(*run, *v1alpha1.ServiceSpec) error) func(*run, *v1alpha1.Service) error {
	return func(rn *run, svc *v1alpha1.Service) error { return apply(rn, &svc.Spec) }
}
