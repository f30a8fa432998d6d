package render

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataBytes is the API server's limit on the data of a ConfigMap or a Secret.
const maxDataBytes = 1 << 20

// validateKind checks what the API server checks of the built-in kinds that packages
// render most: pod templates and their selectors, Service ports, ConfigMap and Secret keys.
func validateKind(typed runtime.Object) field.ErrorList {
	spec := field.NewPath("spec")
	switch o := typed.(type) {
	case *corev1.Pod:
		return validatePodSpec(&o.Spec, nil, spec)
	case *corev1.PodTemplate:
		return validateTemplate(&o.Template, nil, field.NewPath("template"))
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return nil
		}
		return validateTemplate(o.Spec.Template, nil, spec.Child("template"))
	case *appsv1.Deployment:
		return validateTemplate(&o.Spec.Template, o.Spec.Selector, spec.Child("template"))
	case *appsv1.StatefulSet:
		claims := make([]string, 0, len(o.Spec.VolumeClaimTemplates))
		for _, claim := range o.Spec.VolumeClaimTemplates {
			claims = append(claims, claim.Name)
		}
		return validateTemplate(&o.Spec.Template, o.Spec.Selector, spec.Child("template"), claims...)
	case *appsv1.DaemonSet:
		return validateTemplate(&o.Spec.Template, o.Spec.Selector, spec.Child("template"))
	case *appsv1.ReplicaSet:
		return validateTemplate(&o.Spec.Template, o.Spec.Selector, spec.Child("template"))
	case *batchv1.Job:
		return validateTemplate(&o.Spec.Template, nil, spec.Child("template"))
	case *batchv1.CronJob:
		return validateTemplate(&o.Spec.JobTemplate.Spec.Template, nil, spec.Child("jobTemplate", "spec", "template"))
	case *corev1.Service:
		return validateServicePorts(o.Spec.Ports, spec.Child("ports"))
	case *corev1.ConfigMap:
		return validateData(keysOf(o.Data, o.BinaryData), dataSize(o.Data, o.BinaryData), field.NewPath("data"))
	case *corev1.Secret:
		return validateData(keysOf(o.StringData, o.Data), dataSize(o.StringData, o.Data), field.NewPath("data"))
	}
	return nil
}

// validateTemplate checks a pod template: its labels, its selector, its pod (whose mounts
// may name claims, the volume claim templates of a StatefulSet).
func validateTemplate(template *corev1.PodTemplateSpec, selector *metav1.LabelSelector, at *field.Path, claims ...string) field.ErrorList {
	errs := metav1validation.ValidateLabels(template.Labels, at.Child("metadata", "labels"))
	if selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector"))...)
	}
	return append(errs, validatePodSpec(&template.Spec, claims, at.Child("spec"))...)
}

// validatePodSpec checks a pod's containers and volumes; claims are volumes too.
func validatePodSpec(spec *corev1.PodSpec, claims []string, at *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes := map[string]bool{}
	for _, claim := range claims {
		volumes[claim] = true
	}
	for i, volume := range spec.Volumes {
		path := at.Child("volumes").Index(i).Child("name")
		errs = append(errs, dnsLabel(volume.Name, path)...)
		if volumes[volume.Name] {
			errs = append(errs, field.Duplicate(path, volume.Name))
		}
		volumes[volume.Name] = true
	}
	names := map[string]bool{}
	for _, group := range []struct {
		kind       string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		containers := group.containers
		for i := range containers {
			path := at.Child(group.kind).Index(i)
			if names[containers[i].Name] {
				errs = append(errs, field.Duplicate(path.Child("name"), containers[i].Name))
			}
			names[containers[i].Name] = true
			errs = append(errs, validateContainer(&containers[i], volumes, path)...)
		}
	}
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(at.Child("containers"), "a pod needs a container"))
	}
	return errs
}

// validateContainer checks a container's name, image, ports, environment and mounts.
func validateContainer(c *corev1.Container, volumes map[string]bool, at *field.Path) field.ErrorList {
	errs := dnsLabel(c.Name, at.Child("name"))
	if c.Image == "" {
		errs = append(errs, field.Required(at.Child("image"), ""))
	}
	for i, port := range c.Ports {
		path := at.Child("ports").Index(i)
		errs = append(errs, portNumber(int(port.ContainerPort), path.Child("containerPort"))...)
		if port.HostPort != 0 {
			errs = append(errs, portNumber(int(port.HostPort), path.Child("hostPort"))...)
		}
		if port.Name != "" {
			errs = append(errs, messages(validation.IsValidPortName(port.Name), port.Name, path.Child("name"))...)
		}
		errs = append(errs, protocol(port.Protocol, path.Child("protocol"))...)
	}
	for i, env := range c.Env {
		errs = append(errs, messages(validation.IsRelaxedEnvVarName(env.Name), env.Name, at.Child("env").Index(i).Child("name"))...)
	}
	for i, mount := range c.VolumeMounts {
		path := at.Child("volumeMounts").Index(i)
		if !volumes[mount.Name] {
			errs = append(errs, field.NotFound(path.Child("name"), mount.Name))
		}
		if mount.MountPath == "" {
			errs = append(errs, field.Required(path.Child("mountPath"), ""))
		}
	}
	return errs
}

// validateServicePorts checks a Service's ports as the API server does.
func validateServicePorts(ports []corev1.ServicePort, at *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		path := at.Index(i)
		if len(ports) > 1 || port.Name != "" {
			errs = append(errs, dnsLabel(port.Name, path.Child("name"))...)
			if names[port.Name] {
				errs = append(errs, field.Duplicate(path.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		errs = append(errs, portNumber(int(port.Port), path.Child("port"))...)
		if port.NodePort != 0 {
			errs = append(errs, portNumber(int(port.NodePort), path.Child("nodePort"))...)
		}
		switch target := port.TargetPort; {
		case target.Type == intstr.String:
			errs = append(errs, messages(validation.IsValidPortName(target.StrVal), target.StrVal, path.Child("targetPort"))...)
		case target.IntVal != 0:
			errs = append(errs, portNumber(int(target.IntVal), path.Child("targetPort"))...)
		}
		errs = append(errs, protocol(port.Protocol, path.Child("protocol"))...)
	}
	return errs
}

// validateData checks the keys of a ConfigMap or a Secret and the size of their data.
func validateData(keys []string, size int, at *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, key := range keys {
		errs = append(errs, messages(validation.IsConfigMapKey(key), key, at.Key(key))...)
	}
	if size > maxDataBytes {
		errs = append(errs, field.TooLong(at, "", maxDataBytes))
	}
	return errs
}

func keysOf[A, B any](a map[string]A, b map[string]B) []string {
	keys := make([]string, 0, len(a)+len(b))
	for key := range a {
		keys = append(keys, key)
	}
	for key := range b {
		keys = append(keys, key)
	}
	return keys
}

func dataSize(text map[string]string, binary map[string][]byte) int {
	size := 0
	for _, value := range text {
		size += len(value)
	}
	for _, value := range binary {
		size += len(value)
	}
	return size
}

func dnsLabel(name string, at *field.Path) field.ErrorList {
	return messages(validation.IsDNS1123Label(name), name, at)
}

func portNumber(port int, at *field.Path) field.ErrorList {
	return messages(validation.IsValidPortNum(port), port, at)
}

func protocol(p corev1.Protocol, at *field.Path) field.ErrorList {
	switch p {
	case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	}
	return field.ErrorList{field.NotSupported(at, p, []string{"TCP", "UDP", "SCTP"})}
}

// messages turns the messages of a validation helper into errors at a path.
func messages(msgs []string, value any, at *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(at, value, msg))
	}
	return errs
}
