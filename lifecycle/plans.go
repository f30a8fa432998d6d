package lifecycle

import (
	"calaf.io/calaf/api/v1alpha1"
)

// plan returns the stages of an occurrence of a type, or of its rollback. The hooks of
// the _start stages run only in nodes that are ready (a broken node is what a heal is
// for); those of the _end stages wait for the node.
func plan(t v1alpha1.OperationType, rollback bool) []stage {
	if rollback {
		return []stage{hooks("rollback_start", skipUnready), one(restoreStep), hooks("rollback_end", waitReady)}
	}
	switch t {
	case v1alpha1.OperationScale:
		return changePlan("scale", applyScale)
	case v1alpha1.OperationScaleToLevel:
		return changePlan("scale_to_level", applyScaleToLevel)
	case v1alpha1.OperationChangePackage:
		return changePlan("change_current_package", applyChangePackage)
	case v1alpha1.OperationModify:
		return changePlan("modify_information", applyModify)
	case v1alpha1.OperationOperate:
		return changePlan("operate", applyOperate)
	case v1alpha1.OperationHeal:
		return []stage{
			one(selectPodsStep), hooks("heal_start", skipUnready), one(recreatePodsStep), one(replacedStep),
			hooks("heal", waitReady), hooks("heal_end", waitReady),
		}
	case v1alpha1.OperationTerminate:
		return []stage{terminateHooks, one(deleteServiceStep), one(goneStep)}
	}
	return []stage{one(customStep)}
}

// changePlan is the plan of an occurrence that changes the Service's spec: what the
// Service runs is recorded (for a rollback), the _start hooks run, the spec changes and
// the Service is waited for until healthy, the _end hooks run.
func changePlan(hook string, apply func(*run, *v1alpha1.ServiceSpec) error) []stage {
	return []stage{
		one(snapshotStep), hooks(hook+"_start", skipUnready), one(changeStep(apply)), hooks(hook+"_end", waitReady),
	}
}
