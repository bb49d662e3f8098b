{{/*
Chart name, or nameOverride.
*/}}
{{- define "emailsvc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Name prefix of every resource: fullnameOverride, else the release name when it
already contains the chart name, else "<release>-<chart>". Kept to 42 characters
so that "<fullname>-<component>" fits the 63 of a DNS label.
*/}}
{{- define "emailsvc.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 42 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 42 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 42 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of a component's resources (Deployment, Service, ServiceAccount, ...).
Takes (dict "root" $ "name" <component>).
*/}}
{{- define "emailsvc.componentFullname" -}}
{{- printf "%s-%s" (include "emailsvc.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Image reference: repository@digest when a digest is set, else repository:tag
(tag defaults to the chart's appVersion).
*/}}
{{- define "emailsvc.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The one labels helper. Takes (dict "root" $ "component" <name>).
Selectors use only name, instance and component ("emailsvc.selectorLabels"),
which never change over the life of a release.
*/}}
{{- define "emailsvc.labels" -}}
{{ include "emailsvc.selectorLabels" . }}
app.kubernetes.io/version: {{ default .root.Chart.AppVersion .root.Values.image.tag | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "emailsvc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "emailsvc.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{/*
A component's values with componentDefaults filled in. A key the component does
not set comes from the defaults; where both are maps they are merged one level
deep, the component's keys winning (false and 0 included, unlike sprig's merge).
Returns YAML; use with fromYaml.
Takes (dict "root" $ "name" <component> "values" <component values>).
*/}}
{{- define "emailsvc.component" -}}
{{- $c := deepCopy .values }}
{{- range $key, $default := .root.Values.componentDefaults }}
{{- if not (hasKey $c $key) }}
{{- $_ := set $c $key (deepCopy $default) }}
{{- else if and (kindIs "map" $default) (kindIs "map" (get $c $key)) }}
{{- $merged := deepCopy $default }}
{{- range $k, $v := get $c $key }}
{{- $_ := set $merged $k $v }}
{{- end }}
{{- $_ := set $c $key $merged }}
{{- end }}
{{- end }}
{{- if not $c.command }}
{{- $_ := set $c "command" (list "node" (printf "services/%s/dist/main.js" .name)) }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/*
Whether a component is rendered: "true" or "". Takes the component values.
*/}}
{{- define "emailsvc.enabled" -}}
{{- if dig "enabled" true . }}true{{ end }}
{{- end }}

{{/*
Name of the Secret that holds the secret environment.
*/}}
{{- define "emailsvc.secretName" -}}
{{- default (printf "%s-secrets" (include "emailsvc.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{/*
Key in the Secret for a secret environment variable.
Takes (dict "root" $ "env" <NAME>).
*/}}
{{- define "emailsvc.secretKey" -}}
{{- if .root.Values.secrets.existingSecret }}
{{- index .root.Values.secrets.existingSecretKeys .env | default .env }}
{{- else }}
{{- .env }}
{{- end }}
{{- end }}

{{/*
ADMIN_TOKEN of the chart's Secret: the value given, else the one already in the
cluster (so upgrades keep it), else a new random token.
*/}}
{{- define "emailsvc.adminToken" -}}
{{- if .Values.secrets.adminToken }}
{{- .Values.secrets.adminToken }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "emailsvc.secretName" .) }}
{{- $data := dig "data" (dict) $existing }}
{{- if hasKey $data "ADMIN_TOKEN" }}
{{- index $data "ADMIN_TOKEN" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
TOKEN_SIGNING_KEYS of the chart's Secret: the value given, else the one already
in the cluster (upgrades keep it: links in mail stay valid), else one new key.
*/}}
{{- define "emailsvc.tokenSigningKeys" -}}
{{- if .Values.secrets.tokenSigningKeys }}
{{- .Values.secrets.tokenSigningKeys }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "emailsvc.secretName" .) }}
{{- $data := dig "data" (dict) $existing }}
{{- if hasKey $data "TOKEN_SIGNING_KEYS" }}
{{- index $data "TOKEN_SIGNING_KEYS" | b64dec }}
{{- else }}
{{- printf "k1:%s" (randBytes 32) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
SUPPRESSION_KEYS of the chart's Secret: the value given, else the one already
in the cluster (upgrades keep it: erased addresses stay suppressed), else one new key.
*/}}
{{- define "emailsvc.suppressionKeys" -}}
{{- if .Values.secrets.suppressionKeys }}
{{- .Values.secrets.suppressionKeys }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "emailsvc.secretName" .) }}
{{- $data := dig "data" (dict) $existing }}
{{- if hasKey $data "SUPPRESSION_KEYS" }}
{{- index $data "SUPPRESSION_KEYS" | b64dec }}
{{- else }}
{{- printf "s1:%s" (randBytes 32) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
SEALING_KEYS of the chart's Secret: the value given, else the one already in
the cluster (upgrades keep it: sealed DKIM keys and webhook secrets stay
readable), else one new key.
*/}}
{{- define "emailsvc.sealingKeys" -}}
{{- if .Values.secrets.sealingKeys }}
{{- .Values.secrets.sealingKeys }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "emailsvc.secretName" .) }}
{{- $data := dig "data" (dict) $existing }}
{{- if hasKey $data "SEALING_KEYS" }}
{{- index $data "SEALING_KEYS" | b64dec }}
{{- else }}
{{- printf "w1:%s" (randBytes 32) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
PUBLIC_API_URL: config.publicApiUrl, else the first ingress host.
*/}}
{{- define "emailsvc.publicApiUrl" -}}
{{- if .Values.config.publicApiUrl }}
{{- .Values.config.publicApiUrl }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- $tls := false }}
{{- range .Values.ingress.tls }}
{{- if has $host (default (list) .hosts) }}{{ $tls = true }}{{ end }}
{{- end }}
{{- printf "%s://%s" (ternary "https" "http" $tls) $host }}
{{- end }}
{{- end }}

{{/*
Host of the portal's own Ingress: portal.ingress.host, else the host (without
a port) of config.env.PREFERENCES_URL.
*/}}
{{- define "emailsvc.portalHost" -}}
{{- if .Values.portal.ingress.host }}
{{- .Values.portal.ingress.host }}
{{- else }}
{{- with index (.Values.config.env | default dict) "PREFERENCES_URL" }}
{{- regexReplaceAll ":[0-9]+$" (urlParse (toString .)).host "" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Name of the cert-manager issuer of the portal's certificates: portal.issuer.name,
else "<fullname>-acme" when the chart creates it, else empty.
*/}}
{{- define "emailsvc.issuerName" -}}
{{- if .Values.portal.issuer.name }}
{{- .Values.portal.issuer.name }}
{{- else if .Values.portal.issuer.create }}
{{- printf "%s-acme" (include "emailsvc.fullname" .) }}
{{- end }}
{{- end }}

{{/*
CUSTOM_DOMAIN_TARGET: portal.customDomains.target, else config.env.CUSTOM_DOMAIN_TARGET.
*/}}
{{- define "emailsvc.customDomainTarget" -}}
{{- .Values.portal.customDomains.target | default (index (.Values.config.env | default dict) "CUSTOM_DOMAIN_TARGET") | default "" }}
{{- end }}

{{/*
Labels of every object the portal creates for a custom domain (Certificate,
Ingress); it lists and deletes with the same selector, so it never touches
objects it did not create, nor another release's.
*/}}
{{- define "emailsvc.customDomainSelector" -}}
{{- printf "app.kubernetes.io/managed-by=emailsvc-portal,app.kubernetes.io/instance=%s" .Release.Name }}
{{- end }}

{{/*
Environment of the portal with custom domains on, as NAME: EnvVar-source YAML
(the names services/portal reads; README "Custom domains").
*/}}
{{- define "emailsvc.customDomainEnv" -}}
CUSTOM_DOMAINS_ENABLED: { value: "true" }
CUSTOM_DOMAIN_TARGET: { value: {{ include "emailsvc.customDomainTarget" . | quote }} }
CUSTOM_DOMAIN_NAMESPACE: { valueFrom: { fieldRef: { fieldPath: metadata.namespace } } }
CUSTOM_DOMAIN_ISSUER_NAME: { value: {{ include "emailsvc.issuerName" . | quote }} }
CUSTOM_DOMAIN_ISSUER_KIND: { value: {{ .Values.portal.issuer.kind | quote }} }
CUSTOM_DOMAIN_INGRESS_CLASS: { value: {{ .Values.portal.customDomains.ingressClassName | default .Values.portal.ingress.className | quote }} }
CUSTOM_DOMAIN_SERVICE_NAME: { value: {{ include "emailsvc.componentFullname" (dict "root" . "name" "portal") | quote }} }
CUSTOM_DOMAIN_SERVICE_PORT: { value: {{ dig "components" "portal" "ports" "http" "port" "" .Values.AsMap | toString | quote }} }
CUSTOM_DOMAIN_LABEL_SELECTOR: { value: {{ include "emailsvc.customDomainSelector" . | quote }} }
{{- end }}
