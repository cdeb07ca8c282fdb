# Mutation limits: a plan may not change more routes than the root allows.
package workflow

deny contains msg if {
	input.payload.routes > input.root.max_changed_routes
	msg := sprintf("the plan changes %d routes, over the limit of %d", [input.payload.routes, input.root.max_changed_routes])
}
