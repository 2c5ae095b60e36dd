package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClientCert issues a client certificate for user (CN) in groups (O), signed
// by the cluster CA, and returns it and its key as PEM.
func (c *Cluster) ClientCert(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return c.ca.issueClient(user, groups...)
}

// RESTConfigFor returns a rest.Config authenticating as user in groups with a
// new client certificate. Client-side rate limiting is off (QPS -1).
func (c *Cluster) RESTConfigFor(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := c.ClientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	return c.restConfig(certPEM, keyPEM), nil
}

// KubeconfigFor writes a kubeconfig authenticating as user in groups (with a
// new client certificate, embedded) under Dir/kubeconfig and returns its path.
// Calling it again for the same user and groups rewrites the same file.
func (c *Cluster) KubeconfigFor(user string, groups ...string) (path string, err error) {
	cfg, err := c.RESTConfigFor(user, groups...)
	if err != nil {
		return "", err
	}
	path = filepath.Join(c.Dir, "kubeconfig", kubeconfigFileName(user, groups))
	if err := writeKubeconfig(path, cfg, user); err != nil {
		return "", err
	}
	return path, nil
}

// kubeconfigFileName is a readable, file-system-safe name that is distinct
// for each user and set of groups.
func kubeconfigFileName(user string, groups []string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, user)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(user + "\x00" + strings.Join(groups, "\x00")))
	return safe + "-" + hex.EncodeToString(sum[:4]) + ".kubeconfig"
}

// writeKubeconfig writes a single-context kubeconfig for cfg (which must
// carry CA, certificate and key data) to path.
func writeKubeconfig(path string, cfg *rest.Config, user string) error {
	const clusterName, contextName = "polyccm-test", "polyccm-test"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	kc.CurrentContext = contextName
	return clientcmd.WriteToFile(*kc, path)
}
