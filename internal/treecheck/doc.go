// Package treecheck holds tests over the whole source tree: rules of
// style that no single package's tests can see (errors in libraries name
// settings, not command-line flags; functions stay short). It has no code.
package treecheck
