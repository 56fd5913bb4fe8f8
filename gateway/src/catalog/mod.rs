//! The aggregated catalog of tools, prompts, resources and resource templates across backends.
