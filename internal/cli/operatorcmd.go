//go:build !calaf_offline

package cli

import (
	"bytes"
	goflag "flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca/sol004"
)

func newOperatorCommand() *cobra.Command {
	var kube kubeFlags
	opts := operator.DefaultOptions()
	opts.Orchestration = true
	zapOptions := zap.Options{}
	apiClient := apiClientFlags{}
	memoryLimit := resource.MustParse("0")
	gcPercent := operator.DefaultGCPercent
	var webhookTokenFile, alertTokenFile string
	var verify verifyFlags
	var outboundPolicy outboundFlags
	var nfvo nfvoFlags
	var resources string
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the Calaf operator (reconciles Services and Operations)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			config, err := kube.config()
			if err != nil {
				return err
			}
			if err := apiClient.configure(config); err != nil {
				return err
			}
			operator.SetMemoryLimit(memoryLimit.Value())
			operator.SetGCPercent(gcPercent)
			opts.WebhookToken = tokenSource(webhookTokenFile, "CALAF_WEBHOOK_TOKEN")
			opts.AlertToken = tokenSource(alertTokenFile, "CALAF_ALERT_TOKEN")
			opts.Credentials = append(opts.Credentials, credentialFiles(kube.kubeconfig, webhookTokenFile, alertTokenFile)...)
			if err := checkTenancyFlags(&opts); err != nil {
				return err
			}
			if err := nfvo.apply(&opts); err != nil {
				return err
			}
			if err := checkResourceMode(&opts, resources); err != nil {
				return err
			}
			if err := outboundPolicy.apply(&opts); err != nil {
				return err
			}
			if opts.Verify, err = verify.defaults(); err != nil {
				return usageError{err}
			}
			return operator.Run(ctrl.SetupSignalHandler(), config, opts, zap.New(zap.UseFlagOptions(&zapOptions)))
		},
	}
	cmd.Flags().StringVar(&kube.kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster config, $KUBECONFIG, ~/.kube/config)")
	cmd.Flags().StringVar(&kube.context, "context", "", "kubeconfig context")
	apiClient.register(cmd.Flags())
	cmd.Flags().StringVar(&opts.Namespace, "watch-namespace", "", "watch only this namespace (namespaced mode); default: all")
	cmd.Flags().Var(selectorFlag{&opts.ServiceSelector}, "watch-label-selector", "handle only the Services this label selector selects: one shard of a fleet, e.g. sharding.calaf.io/key=shard1 (and !sharding.calaf.io/key for the main one)")
	cmd.Flags().StringVar(&opts.MetricsAddress, "metrics-bind-address", opts.MetricsAddress, "address of the Prometheus metrics endpoint (0 disables it)")
	cmd.Flags().Var(quantityFlag{&memoryLimit}, "memory-limit", "soft memory limit of the Go runtime, e.g. 160Mi (default: 90% of the container's limit, or $GOMEMLIMIT)")
	cmd.Flags().IntVar(&gcPercent, "gc-percent", gcPercent, "garbage collection target of the Go runtime, as GOGC: the heap grows by this percent of its live size between collections ($GOGC, when set, wins)")
	cmd.Flags().BoolVar(&opts.Pprof, "enable-pprof", false, "serve net/http/pprof on the metrics endpoint")
	cmd.Flags().StringVar(&opts.HealthAddress, "health-probe-bind-address", opts.HealthAddress, "address of the health and readiness probes")
	cmd.Flags().BoolVar(&opts.LeaderElection, "leader-elect", false, "elect a leader, for running several replicas")
	cmd.Flags().StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease")
	cmd.Flags().DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", opts.LeaseDuration, "how long a follower waits before taking a lease its leader stopped renewing")
	cmd.Flags().DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", opts.RenewDeadline, "how long the leader keeps trying to renew its lease (an API server outage up to this long costs nothing)")
	cmd.Flags().DurationVar(&opts.RetryPeriod, "leader-election-retry-period", opts.RetryPeriod, "how often leader election tries")
	cmd.Flags().DurationVar(&opts.RestartAfter, "restart-after-outage", opts.RestartAfter, "after an API server outage this long, make the manager anew in-process once the API answers (0: never)")
	cmd.Flags().IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "Services reconciled at once")
	cmd.Flags().StringVar(&opts.PackageCacheDir, "package-cache-dir", opts.PackageCacheDir, "directory of the local package cache")
	cmd.Flags().StringVar(&opts.ProfileCacheDir, "profile-cache-dir", opts.ProfileCacheDir, "directory of the cache of profiles imported by reference (kept across restarts, verified when read)")
	cmd.Flags().Int64Var(&opts.PackageCacheBytes, "package-cache-bytes", opts.PackageCacheBytes, "size bound of the local package cache")
	cmd.Flags().IntVar(&opts.CompileCacheSize, "compile-cache-size", opts.CompileCacheSize, "compiled packages kept in memory")
	cmd.Flags().IntVar(&opts.RenderCacheSize, "render-cache-size", opts.RenderCacheSize, "renders kept in memory")
	cmd.Flags().DurationVar(&opts.ScriptTimeout, "script-timeout", opts.ScriptTimeout, "deadline of each node's renderer in the operator and, once for every 100 node templates, of all a package's scriptlets")
	cmd.Flags().DurationVar(&opts.ProgressInterval, "progress-interval", opts.ProgressInterval, "how often a Service whose objects are not healthy yet is checked")
	cmd.Flags().DurationVar(&opts.SettleDelay, "settle-delay", opts.SettleDelay, "how long a Service's status may wait for its new objects' controllers to look at them, so that one status patch says Applied and Ready (0: Applied said at once, Ready when it is)")
	cmd.Flags().StringVar(&opts.RunnerPath, "runner", "", "calaf-runner binary streamed into pods to run operations (default: next to calaf, or on $PATH)")
	cmd.Flags().StringVar(&opts.WebhookAddress, "webhook-bind-address", "", "address of the push webhook, POST /hooks/git (empty: no webhook)")
	cmd.Flags().StringVar(&webhookTokenFile, "webhook-token-file", "", "file holding the push webhook's token (several, one per line, while rotating it), re-read on every request (default: $CALAF_WEBHOOK_TOKEN)")
	cmd.Flags().StringVar(&alertTokenFile, "alert-token-file", "", "file holding the Alertmanager receiver's token (several, one per line, while rotating it), re-read on every request; never the push webhook's (default: $CALAF_ALERT_TOKEN)")
	cmd.Flags().StringVar(&opts.WebhookCertFile, "webhook-tls-cert-file", "", "TLS certificate (PEM) the webhook serves, re-read when it changes")
	cmd.Flags().StringVar(&opts.WebhookKeyFile, "webhook-tls-key-file", "", "TLS key (PEM) of --webhook-tls-cert-file")
	cmd.Flags().BoolVar(&opts.WebhookInsecureHTTP, "webhook-insecure-http", false, "serve the webhook over plain HTTP (its tokens then cross the network in clear)")
	cmd.Flags().StringVar(&verify.mode, "verify-mode", "", "signature policy of every Service's package (SOL004): Enforce, Warn, or Off; spec.verify can only make it stricter")
	cmd.Flags().StringVar(&verify.anchors, "verify-anchors", "", "PEM bundle of trust anchors every Service trusts (read at start)")
	cmd.Flags().BoolVar(&verify.serviceAnchors, "verify-service-anchors", true, "also trust the anchors a Service names in spec.verify.anchors")
	cmd.Flags().StringVar(&resources, "resources", string(operator.ResourcesCRD), "where Services and Operations are kept: crd (custom resources), configmap (labelled ConfigMaps of --watch-namespace: no CRD, a Role is enough; see docs/configmap-mode.md), or both")
	registerIsolationFlags(cmd, &opts)
	registerTenancyFlags(cmd, &opts)
	registerOutboundFlags(cmd, &opts, &outboundPolicy)
	registerNFVOFlags(cmd, &nfvo)
	logFlags := goflag.NewFlagSet("log", goflag.ContinueOnError)
	zapOptions.BindFlags(logFlags)
	cmd.Flags().AddGoFlagSet(logFlags)
	return cmd
}

// checkResourceMode sets the operator's resource mode from --resources: ConfigMap mode
// is namespaced (its Role reaches one namespace).
func checkResourceMode(opts *operator.Options, resources string) error {
	switch mode := operator.ResourceMode(resources); mode {
	case operator.ResourcesCRD, operator.ResourcesConfigMaps, operator.ResourcesBoth:
		opts.Resources = mode
	default:
		return usageError{fmt.Errorf("--resources=%s: want crd, configmap or both", resources)}
	}
	if opts.Resources != operator.ResourcesCRD && opts.Namespace == "" {
		return usageError{fmt.Errorf("--resources=%s needs --watch-namespace: ConfigMap mode serves one namespace", resources)}
	}
	return nil
}

// apiClientFlags are the operator's settings of its API server client.
type apiClientFlags struct {
	qps         float32
	burst       int
	compression bool
}

func (f *apiClientFlags) register(flags *pflag.FlagSet) {
	flags.Float32Var(&f.qps, "kube-api-qps", 100, "requests per second to the API server, sustained")
	flags.IntVar(&f.burst, "kube-api-burst", 300, "requests to the API server in a burst")
	flags.BoolVar(&f.compression, "kube-api-compression", false, "ask the API server to compress its responses and watch streams (gzip): it costs both sides CPU, worth it only on a slow link to the API server")
}

// idleConnsPerHost is how many idle connections to the API server the operator keeps, as
// client-go's own transports do.
const idleConnsPerHost = 25

// configure sets them on config. Without compression, neither the API server nor the
// operator spends CPU on gzip for every response and watch event, which on a cluster's
// network saves more than it costs. An API server reached in plain HTTP (through a local
// proxy) gets a transport of the operator's own, as one reached over TLS does: client-go
// would use Go's shared default one, which asks for gzip whatever the config says and
// keeps only 2 idle connections, so that the operator's concurrent requests would open
// and close connections all the time.
func (f apiClientFlags) configure(config *rest.Config) error {
	config.UserAgent = "calaf-operator"
	config.QPS, config.Burst = f.qps, f.burst
	config.DisableCompression = !f.compression
	if config.Transport != nil || config.Dial != nil || config.Proxy != nil {
		return nil
	}
	tlsConfig, err := rest.TLSConfigFor(config)
	if err != nil || tlsConfig != nil {
		return err
	}
	config.Transport = utilnet.SetTransportDefaults(&http.Transport{DisableCompression: config.DisableCompression, MaxIdleConnsPerHost: idleConnsPerHost})
	return nil
}

// tokenSource reads a receiver's tokens from a file (e.g. a mounted Secret, so it can be
// rotated) or from the environment variable env; nil when neither is given (the receiver
// is not served).
func tokenSource(file, env string) func() ([]byte, error) {
	if file == "" && strings.TrimSpace(os.Getenv(env)) == "" {
		return nil
	}
	return func() ([]byte, error) {
		if file == "" {
			return []byte(strings.TrimSpace(os.Getenv(env))), nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		token := bytes.TrimSpace(data)
		if len(token) == 0 {
			return nil, fmt.Errorf("%s is empty", file)
		}
		return token, nil
	}
}

// unifiedDiff returns a unified diff between two texts.
func unifiedDiff(a, b string) string {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b), FromFile: "live", ToFile: "desired", Context: 3,
	})
	return diff
}

// verifyFlags are the operator's signature policy flags.
type verifyFlags struct {
	mode           string
	anchors        string
	serviceAnchors bool
}

// defaults reads the flags into the policy every Service gets.
func (f verifyFlags) defaults() (source.VerifyDefaults, error) {
	mode, err := sol004.ParseMode(f.mode)
	if err != nil {
		return source.VerifyDefaults{}, fmt.Errorf("--verify-mode: %w", err)
	}
	defaults := source.VerifyDefaults{Mode: mode, IgnoreServiceAnchors: !f.serviceAnchors}
	if f.anchors == "" {
		return defaults, nil
	}
	data, err := os.ReadFile(f.anchors)
	if err != nil {
		return defaults, fmt.Errorf("--verify-anchors: %w", err)
	}
	if defaults.Anchors, err = sol004.ParseCertificates(data, f.anchors); err != nil {
		return defaults, fmt.Errorf("--verify-anchors: %w", err)
	}
	defaults.AnchorsFrom = "the operator's anchors"
	return defaults, nil
}

// selectorFlag is a label selector given on the command line.
type selectorFlag struct{ selector *labels.Selector }

func (f selectorFlag) String() string {
	if f.selector == nil || *f.selector == nil {
		return ""
	}
	return (*f.selector).String()
}

func (f selectorFlag) Set(value string) error {
	selector, err := labels.Parse(value)
	if err != nil {
		return fmt.Errorf("label selector %q: %w", value, err)
	}
	*f.selector = selector
	return nil
}

func (selectorFlag) Type() string { return "selector" }
