//! Discovery images: the discovery ignition, ISO embedding and streaming, iPXE.
