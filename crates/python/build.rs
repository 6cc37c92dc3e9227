// Empty: the build-dependencies in Cargo.toml are there for feature unification only
// (see the comment there); Cargo considers build-dependencies only with a build script.
fn main() {}
