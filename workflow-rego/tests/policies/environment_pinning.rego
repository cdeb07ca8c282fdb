# Environment pinning: every environment the payload names must be the one
# pinned in the run's root invariants.
package workflow

env_fields := ["target_env", "vpc_env"]

deny contains msg if {
	some field in env_fields
	env := input.payload[field]
	env != input.root.allowed_env
	msg := sprintf("%s `%s` is not the pinned environment `%s`", [field, env, input.root.allowed_env])
}
