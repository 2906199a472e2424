//! Compiles the vendored protos (proto/) with protox, a protobuf compiler in Rust, so the
//! build needs no `protoc`: the descriptor set feeds tonic's code generator and, encoded,
//! the reflection service.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rls = "envoy/service/ratelimit/v3/rls.proto";
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile([rls], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("rls_descriptor.bin"), descriptors.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
