{{/* Names, as `helm create` makes them. */}}
{{- define "polyccm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release name when it contains the chart's name (release
"polyccm" gives the names of packaging/kubernetes/rbac.yaml), else
<release>-<chart>.
*/}}
{{- define "polyccm.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "polyccm.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "polyccm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "polyccm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "polyccm.labels" -}}
helm.sh/chart: {{ include "polyccm.chart" . }}
{{ include "polyccm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "polyccm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "polyccm.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name the existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The subject the chart's RBAC binds: its ServiceAccount. */}}
{{- define "polyccm.subject" -}}
- kind: ServiceAccount
  name: {{ include "polyccm.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The image: repository@digest when a digest is set, else repository:tag. */}}
{{- define "polyccm.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Where the pod finds its config and the Secret's files. */}}
{{- define "polyccm.configPath" -}}/etc/polyccm/ccm.yaml{{- end }}
{{- define "polyccm.secretsDir" -}}/etc/polyccm/secrets{{- end }}

{{/* Settings of the config the templates need, with polyccm's defaults. */}}
{{- define "polyccm.securePort" -}}
{{- dig "serving" "securePort" 10258 (.Values.config | default dict) | int }}
{{- end }}
{{- define "polyccm.bindAddress" -}}
{{- dig "serving" "bindAddress" "0.0.0.0" (.Values.config | default dict) }}
{{- end }}
{{- define "polyccm.leaderElection" -}}
{{- dig "leaderElection" "enabled" true (.Values.config | default dict) }}
{{- end }}
{{- define "polyccm.leaseNamespace" -}}
{{- dig "leaderElection" "namespace" "kube-system" (.Values.config | default dict) }}
{{- end }}
{{- define "polyccm.leaseName" -}}
{{- dig "leaderElection" "leaseName" "cloud-controller-manager" (.Values.config | default dict) }}
{{- end }}
{{- define "polyccm.controller" -}}
{{- dig "controllers" .name false (.root.Values.config | default dict) }}
{{- end }}

{{/*
polyccm.refuseInline fails the render on an inline secret anywhere under
.value: a mapping of secret forms with `value` ({value: ...}), which would
put a credential in a ConfigMap and in the release's history. .path names
the value for the message.
*/}}
{{- define "polyccm.refuseInline" -}}
{{- $v := .value }}
{{- if kindIs "map" $v }}
{{- if and (hasKey $v "value") (eq 0 (len (omit $v "file" "env" "credential" "value"))) }}
{{- fail (printf "%s: a credential must not be given inline in the chart's values (it would be stored in a ConfigMap and in the Helm release). Put it in the Secret named by credentials.existingSecret and name its key in credentials.keys, or give {file: ...} or {env: ...}" .path) }}
{{- end }}
{{- range $k, $sub := $v }}
{{- include "polyccm.refuseInline" (dict "path" (printf "%s.%s" $.path $k) "value" $sub) }}
{{- end }}
{{- else if kindIs "slice" $v }}
{{- range $i, $sub := $v }}
{{- include "polyccm.refuseInline" (dict "path" (printf "%s[%d]" $.path $i) "value" $sub) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
polyccm.config is the whole config polyccm reads: .Values.config with the
driver, an empty kubeconfig (in-cluster: the ServiceAccount's token), the
selected driver's section only, and its secret fields pointed at the
Secret's files.
*/}}
{{- define "polyccm.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $driver := .Values.driver }}
{{- if hasKey $cfg "driver" }}
{{- fail "config.driver: set the driver with the value `driver`, not in config" }}
{{- end }}
{{- if $cfg.kubeconfig }}
{{- fail "config.kubeconfig: must be empty: in the cluster polyccm uses its ServiceAccount's token" }}
{{- end }}
{{- include "polyccm.refuseInline" (dict "path" "config" "value" $cfg) }}
{{- /* A secret field given as a plain string is inline too, for any driver. */}}
{{- range $d, $fields := .Values.credentials.keys }}
{{- range $field, $_ := $fields }}
{{- $v := dig "drivers" $d $field nil $cfg }}
{{- if and (ne $v nil) (not (kindIs "map" $v)) }}
{{- fail (printf "config.drivers.%s.%s: a credential must not be given inline in the chart's values (it would be stored in a ConfigMap and in the Helm release). Put it in the Secret named by credentials.existingSecret and name its key in credentials.keys.%s.%s" $d $field $d $field) }}
{{- end }}
{{- end }}
{{- end }}
{{- $block := deepCopy (get ($cfg.drivers | default dict) $driver | default dict) }}
{{- $keys := get .Values.credentials.keys $driver | default dict }}
{{- $secret := .Values.credentials.existingSecret }}
{{- /* OpenStack authenticates with an application credential or a password,
never both: the config's applicationCredentialID or Name picks the first. */}}
{{- if eq $driver "openstack" }}
{{- if $block.cloud }}
{{- $keys = omit $keys "password" "applicationCredentialSecret" }}
{{- else if or $block.applicationCredentialID $block.applicationCredentialName }}
{{- $keys = omit $keys "password" "clouds" }}
{{- else }}
{{- $keys = omit $keys "applicationCredentialSecret" "clouds" }}
{{- end }}
{{- end }}
{{- range $field, $key := $keys }}
{{- $path := printf "config.drivers.%s.%s" $driver $field }}
{{- if hasKey $block $field }}
{{- if and $secret $key }}
{{- fail (printf "%s and credentials.keys.%s.%s both give this secret: keep one (set the key to \"\" to use %s)" $path $driver $field $path) }}
{{- end }}
{{- else if and $secret $key }}
{{- $_ := set $block $field (dict "file" (printf "%s/%s" (include "polyccm.secretsDir" $) $key)) }}
{{- end }}
{{- end }}
{{- if and (eq $driver "digitalocean") (not (hasKey $block "token")) }}
{{- fail "driver digitalocean needs an API token: set credentials.existingSecret to a Secret holding it under the key credentials.keys.digitalocean.token" }}
{{- end }}
{{- if and (eq $driver "hetzner") (not (hasKey $block "token")) }}
{{- fail "driver hetzner needs an API token: set credentials.existingSecret to a Secret holding it under the key credentials.keys.hetzner.token" }}
{{- end }}
{{- if and (eq $driver "openstack") (not (hasKey $block "password")) (not (hasKey $block "applicationCredentialSecret")) (not (hasKey $block "clouds")) }}
{{- fail "driver openstack needs a credential: set credentials.existingSecret to a Secret holding an application credential's secret under the key credentials.keys.openstack.applicationCredentialSecret (with config.drivers.openstack.applicationCredentialID), a password under credentials.keys.openstack.password, or a clouds.yaml under credentials.keys.openstack.clouds (with config.drivers.openstack.cloud)" }}
{{- end }}
{{- if and (eq $driver "aws") (ne (hasKey $block "accessKeyID") (hasKey $block "secretAccessKey")) }}
{{- fail "driver aws: give both credentials.keys.aws.accessKeyID and credentials.keys.aws.secretAccessKey, or neither (the instance role)" }}
{{- end }}
{{- $_ := set $cfg "driver" $driver }}
{{- $_ := set $cfg "kubeconfig" "" }}
{{- $_ := set $cfg "drivers" (dict $driver $block) }}
{{- toYaml $cfg }}
{{- end }}

{{/* Checks of the values that involve more than one value. */}}
{{- define "polyccm.validate" -}}
{{- $le := eq (include "polyccm.leaderElection" .) "true" }}
{{- if and (eq .Values.kind "Deployment") (gt (int .Values.replicas) 1) (not $le) }}
{{- fail (printf "replicas: %d replicas need config.leaderElection.enabled: true, or they would all act at once" (int .Values.replicas)) }}
{{- end }}
{{- if and (eq .Values.kind "DaemonSet") (not $le) }}
{{- fail "kind: a DaemonSet runs a replica per node and needs config.leaderElection.enabled: true" }}
{{- end }}
{{- if eq (include "polyccm.securePort" .) "0" }}
{{- fail "config.serving.securePort: 0 turns off the health endpoints the probes need" }}
{{- end }}
{{- if and (not .Values.hostNetwork) (hasPrefix "127." (include "polyccm.bindAddress" .)) }}
{{- fail "config.serving.bindAddress: a loopback address is unreachable by the probes without hostNetwork" }}
{{- end }}
{{- end }}
