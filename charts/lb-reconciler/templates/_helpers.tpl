{{/* The release's objects' name: the release name when it holds the chart's, else <release>-lb-reconciler. */}}
{{- define "lb-reconciler.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lb-reconciler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lb-reconciler.labels" -}}
{{ include "lb-reconciler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding cloud.conf: the chart's own (inline) or the user's. */}}
{{- define "lb-reconciler.cloudConfigSecret" -}}
{{- if .Values.cloudConfig.inline -}}
{{- printf "%s-cloud-config" (include "lb-reconciler.fullname" .) -}}
{{- else -}}
{{- required "cloudConfig.existingSecret or cloudConfig.inline is required: the controller's cloud.conf" .Values.cloudConfig.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "lb-reconciler.shared" -}}
{{- if eq .Values.state.backend "shared" -}}true{{- end -}}
{{- end -}}
