//! The code generated from the vendored protos (proto/, see its README), one module per
//! protobuf package.
#![allow(missing_docs, clippy::all, rustdoc::all)]

/// Envoy's packages.
pub mod envoy {
    /// `envoy.config`.
    pub mod config {
        /// `envoy.config.core`.
        pub mod core {
            /// `envoy.config.core.v3`.
            pub mod v3 {
                tonic::include_proto!("envoy.config.core.v3");
            }
        }
    }
    /// `envoy.extensions`.
    pub mod extensions {
        /// `envoy.extensions.common`.
        pub mod common {
            /// `envoy.extensions.common.ratelimit`.
            pub mod ratelimit {
                /// `envoy.extensions.common.ratelimit.v3`: the request's descriptors.
                pub mod v3 {
                    tonic::include_proto!("envoy.extensions.common.ratelimit.v3");
                }
            }
        }
    }
    /// `envoy.type`.
    pub mod r#type {
        /// `envoy.type.v3`.
        pub mod v3 {
            tonic::include_proto!("envoy.r#type.v3");
        }
    }
    /// `envoy.service`.
    pub mod service {
        /// `envoy.service.ratelimit`.
        pub mod ratelimit {
            /// `envoy.service.ratelimit.v3`: `RateLimitService`.
            pub mod v3 {
                tonic::include_proto!("envoy.service.ratelimit.v3");
            }
        }
    }
}

/// The `udpa` annotations.
pub mod udpa {
    /// `udpa.annotations`.
    pub mod annotations {
        tonic::include_proto!("udpa.annotations");
    }
}

/// protoc-gen-validate's rules.
pub mod validate {
    tonic::include_proto!("validate");
}

/// The `xds` packages.
pub mod xds {
    /// `xds.annotations`.
    pub mod annotations {
        /// `xds.annotations.v3`.
        pub mod v3 {
            tonic::include_proto!("xds.annotations.v3");
        }
    }
    /// `xds.core`.
    pub mod core {
        /// `xds.core.v3`.
        pub mod v3 {
            tonic::include_proto!("xds.core.v3");
        }
    }
}

/// The encoded descriptor set of every vendored file, for the reflection service.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("rls_descriptor");

pub use envoy::service::ratelimit::v3 as rls;
