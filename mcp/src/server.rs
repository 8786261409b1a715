//! The MCP server: `initialize` (or a `2026-07-28` request's own `_meta`), `tools/list` and
//! `tools/call` over a [`Catalog`], answered by rmcp's protocol layer.

use crate::admission::Admission;
use crate::call::Calls;
use crate::catalog::{Catalog, TOOLS_PAGE};
use crate::config::McpConfig;
use crate::naming::MAX_TOOL_NAME;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use runx_runtime::{EnvSource, Runtime};
use std::borrow::Cow;
use std::sync::Arc;

/// The protocol revisions served: the two with an `initialize` handshake that clients speak
/// today, and `2026-07-28`, whose requests carry their version and capabilities in `_meta`
/// and whose clients may start with `server/discover`.
pub const PROTOCOL_VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// What the server tells a client about itself, in `initialize` and `server/discover`.
const INSTRUCTIONS: &str = "Each tool runs one runner of a runx skill package: a javascript export in a sandbox with no network, files or clock (the same inputs give the same output), or a declared command as a supervised process. Arguments are the runner's declared inputs. A result's structuredContent is {output, runx: {status, skillName, runId, receiptId, events}}; a failed run is a result with isError, and runx's {kind, code, message} in _meta under `runx/error`; every result names its receipt (id, path, digest, signer) in _meta under `runx/receipt`.";

/// A server of skill runners as MCP tools. Cheap to clone: clones share one runtime, one
/// catalog and one set of bounds (Streamable HTTP makes one per session).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    calls: Calls,
}

impl McpServer {
    /// A server of `catalog`'s tools, running them on `runtime` within `config`'s bounds.
    pub fn new(runtime: Arc<Runtime>, catalog: Catalog, config: McpConfig) -> McpServer {
        let env = if config.env.is_empty() {
            EnvSource::Process
        } else {
            // The server's environment with `--env` on top: declared names come from it, as
            // they would from the process, and a cli-tool's baseline too; nothing else
            // reaches a step, as for `runx skill`.
            let mut all: std::collections::BTreeMap<String, String> = std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect();
            all.extend(config.env);
            EnvSource::Served(all)
        };
        McpServer {
            inner: Arc::new(Inner {
                catalog,
                calls: Calls {
                    runtime,
                    admission: Admission::new(&config.serve),
                    env,
                    workspace: config.serve.cwd.clone(),
                    receipt_dir: config.receipt_dir,
                },
            }),
        }
    }

    /// Calls admitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.inner.calls.admission.in_flight()
    }

    /// The tools served.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS);
        info.server_info = Implementation::new("runx", env!("CARGO_PKG_VERSION"));
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let (tools, next) = self
            .inner
            .catalog
            .page(cursor.as_deref(), TOOLS_PAGE)
            .map_err(|_| {
                ErrorData::invalid_params(
                    format!(
                        "invalid cursor {:?}: pass the nextCursor of the previous tools/list",
                        cursor.unwrap_or_default()
                    ),
                    None,
                )
            })?;
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(entry) = self.inner.catalog.get(&request.name).cloned() else {
            // The name is the client's, up to a whole message long: quoted in part.
            let shown: String = request.name.chars().take(MAX_TOOL_NAME).collect();
            let cut = if shown.len() < request.name.len() {
                "…"
            } else {
                ""
            };
            let names: Vec<String> = self
                .inner
                .catalog
                .tools()
                .map(|t| t.name.to_string())
                .collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{shown}{cut}`{}; tools/list lists the {} tools",
                    // Only a name that could be a tool gets a hint: the distance of a long
                    // one would cost its length times each tool's, in time and memory.
                    if cut.is_empty() {
                        runx_profile::did_you_mean(&request.name, names.iter().map(String::as_str))
                    } else {
                        String::new()
                    },
                    names.len()
                ),
                None,
            ));
        };
        let result = self
            .inner
            .calls
            .call(&entry, request.arguments, &context)
            .await?;
        Ok(CallToolResponse::from(result))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.catalog.get(name).map(|e| e.tool.clone())
    }
}
