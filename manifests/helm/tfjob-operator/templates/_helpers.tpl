{{/*
Names, labels and the objects read from the kustomize install (files/ links to manifests/), so the
RBAC rules have one source: the chart renders them from the same files `kubectl apply -k` reads.
*/}}

{{- define "tfjob-operator.name" -}}
{{- default "tfjob-operator" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tfjob-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "tfjob-operator.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "tfjob-operator.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels Helm users expect on every object; never in selectors (those match the kustomize install). */}}
{{- define "tfjob-operator.chartLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "tfjob-operator.labels" -}}
app.kubernetes.io/name: {{ include "tfjob-operator.name" . }}
{{ include "tfjob-operator.chartLabels" . }}
{{- end -}}

{{/* The operator's ServiceAccount: the chart's own (named like the other objects), or an existing one. */}}
{{- define "tfjob-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "tfjob-operator.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "tfjob-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfjob-operator.name" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{/*
The operator's image: image.repository and image.tag, each defaulting to what manifests/operator/
kustomization.yaml sets (`kustomize edit set image` there sets it for the chart too), else the
chart's name and appVersion.
*/}}
{{- define "tfjob-operator.image" -}}
{{- $set := dict -}}
{{- range (.Files.Get "files/operator-kustomization.yaml" | fromYaml).images -}}
{{- if eq .name "tfjob-operator" }}{{ $set = . }}{{ end -}}
{{- end -}}
{{- $repository := .Values.image.repository | default $set.newName | default "tfjob-operator" -}}
{{- $tag := .Values.image.tag | default $set.newTag | default .Chart.AppVersion | toString -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}

{{/*
The object of a kind in a (multi-document) file under files/, as YAML.
Usage: fromYaml (include "tfjob-operator.fileObject" (list $ "files/x.yaml" "Role"))
*/}}
{{- define "tfjob-operator.fileObject" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- $kind := index . 2 -}}
{{- $found := dict -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($root.Files.Get $path) -1 -}}
{{- $object := fromYaml $doc -}}
{{- if and $object (eq (get $object "kind") $kind) -}}
{{- $found = $object -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "no %s in %s" $kind $path) -}}
{{- end -}}
{{- toYaml $found -}}
{{- end -}}

{{/*
The job permissions of a ClusterRole or Role read from files/, less the networkpolicies rule when
rbac.networkPolicies is false (what manifests/rbac/without-network-policies/ removes).
Usage: include "tfjob-operator.jobRules" (list $rules .Values.rbac)
*/}}
{{- define "tfjob-operator.jobRules" -}}
{{- $rbac := index . 1 -}}
{{- $rules := list -}}
{{- range $rule := index . 0 -}}
{{- if or $rbac.networkPolicies (not (has "networkpolicies" $rule.resources)) -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}
