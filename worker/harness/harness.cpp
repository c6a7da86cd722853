// kforge_harness: the public entry points (checker, check command) link here; the
// parts live in kforge_harness_core and kforge_harness_reference.
namespace kforge::harness {}
