// Command provisioner is the test ground's dynamic hostPath provisioner: it gives every
// PersistentVolumeClaim of one StorageClass (calaf-local) a hostPath PersistentVolume in a
// directory of its own under -root, bound to the claim, and removes the directory and the
// volume again once the claim is gone and the volume Released (reclaim policy Delete).
// cluster-up.sh starts it on the one-node cluster, which has no other storage:
//
//	provisioner -kubeconfig admin.kubeconfig -root $CALAF_RUN/volumes -node 127.0.0.1
//
// It only suits a one-node cluster: the volumes live on the machine it runs on.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	var (
		kubeconfig string
		cfg        config
	)
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	flag.StringVar(&cfg.root, "root", "", "absolute directory holding one directory per volume (required)")
	flag.StringVar(&cfg.class, "storage-class", "calaf-local", "the StorageClass whose claims are provisioned")
	flag.StringVar(&cfg.name, "name", "ground.calaf.io/hostpath", "provisioner name (the StorageClass's provisioner field)")
	flag.StringVar(&cfg.node, "node", "127.0.0.1", "name of the node the volumes live on (kubernetes.io/hostname)")
	flag.Parse()

	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, kubeconfig, cfg); err != nil {
		slog.Error("provisioner failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string, cfg config) error {
	if kubeconfig == "" || cfg.root == "" {
		return fmt.Errorf("-kubeconfig and -root are required")
	}
	if !filepath.IsAbs(cfg.root) {
		return fmt.Errorf("-root %q is not absolute", cfg.root)
	}
	cfg.root = filepath.Clean(cfg.root)
	if err := os.MkdirAll(cfg.root, 0o755); err != nil {
		return err
	}
	rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactory(client, 5*time.Minute)
	p, err := newProvisioner(client, factory, cfg)
	if err != nil {
		return err
	}
	defer p.shutdown()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	slog.Info("provisioning", "storageClass", cfg.class, "provisioner", cfg.name, "root", cfg.root, "node", cfg.node)
	p.run(ctx)
	slog.Info("stopped")
	return nil
}
