# Forbidden jurisdictions: the list is data (`data.forbidden_jurisdictions`),
# added with `Policy::add_data`, so it changes without editing the policy.
package workflow

deny contains msg if {
	input.payload.region in data.forbidden_jurisdictions
	msg := sprintf("region `%s` is a forbidden jurisdiction", [input.payload.region])
}
