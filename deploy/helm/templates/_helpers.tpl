{{- define "deerflow.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "deerflow.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "deerflow.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "deerflow.secretName" -}}
{{- default (include "deerflow.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "deerflow.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{/* The environment every DeerFlow process shares. */}}
{{- define "deerflow.env" -}}
- name: DJANGO_DEBUG
  value: "false"
- name: DJANGO_SECRET_KEY
  valueFrom: {secretKeyRef: {name: {{ include "deerflow.secretName" . }}, key: DJANGO_SECRET_KEY}}
- name: DATABASE_URL
  valueFrom: {secretKeyRef: {name: {{ include "deerflow.secretName" . }}, key: DATABASE_URL}}
- name: REDIS_URL
  valueFrom: {secretKeyRef: {name: {{ include "deerflow.secretName" . }}, key: REDIS_URL}}
- name: ALLOWED_HOSTS
  value: {{ .Values.allowedHosts | quote }}
- name: RUN_EXECUTOR
  value: celery
- name: SHUTDOWN_GRACE_SECONDS
  value: {{ .Values.shutdown.graceSeconds | quote }}
- name: DEER_FLOW_CONFIG_PATH
  value: /etc/deerflow/config.yaml
{{- if .Values.sandbox.dockerHost }}
- name: DOCKER_HOST
  value: {{ .Values.sandbox.dockerHost | quote }}
{{- end }}
{{- range $name, $value := .Values.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "deerflow.volumeMounts" -}}
- {name: data, mountPath: /data}
- {name: config, mountPath: /etc/deerflow, readOnly: true}
{{- end -}}

{{- define "deerflow.volumes" -}}
- name: data
  persistentVolumeClaim: {claimName: {{ include "deerflow.fullname" . }}-data}
- name: config
  configMap: {name: {{ include "deerflow.fullname" . }}-config}
{{- end -}}

{{- define "deerflow.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
{{- end -}}
