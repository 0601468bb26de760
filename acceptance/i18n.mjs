// acceptance/i18n.mjs: fixed strings of the report. English is the key;
// ZH maps it (headings, areas, promises, fix texts) to Chinese. Item ids,
// clause citations and observed values are never translated. A string
// without an entry falls back to English.

const UI = {
  title: ['skill-mcp acceptance report', 'skill-mcp 验收报告'],
  date: ['Date', '日期'],
  binary: ['Binary', '二进制文件'],
  result: ['Result', '结果'],
  passed: ['passed', '通过'],
  failed: ['failed', '失败'],
  stopped: ['stopped at the first failure (--first-failure)', '在第一个失败处停止（--first-failure）'],
  spec: ['Reference', '依据'],
  items_heading: ['Items', '检查项'],
  col_id: ['id', '编号'],
  col_area: ['area', '领域'],
  col_cite: ['cites', '引用条款'],
  col_promise: ['promise', '承诺'],
  col_result: ['result', '结果'],
  pass: ['pass', '通过'],
  fail: ['FAIL', '失败'],
  details: ['details', '详情'],
  failures_heading: ['Failures', '失败详情'],
  observed: ['Observed', '实际'],
  expected: ['Expected', '期望'],
  fix: ['Fix', '修复方法'],
  none: ['None: every item passed.', '无：所有检查项均通过。'],
};

export const ZH = {
  // areas
  'CLI & flags': '命令行与参数',
  'HTTP & DNS rebinding': 'HTTP 与 DNS 重绑定',
  'Legacy handshake': '旧版握手',
  'Modern 2026-07-28 era': '新版 2026-07-28 协议',
  'Errors': '错误',
  'tools/list schemas': 'tools/list 与模式',
  'list_skills': 'list_skills',
  'load_skill': 'load_skill',
  'read_skill_file': 'read_skill_file',
  'Path jail': '路径隔离',
  'Resources & aliases': '资源与别名',
  'Skills extension & prompts': 'Skills 扩展与提示词',
  'Discovery index & export': '发现索引与导出',
  'run_skill_script': 'run_skill_script',
  'Hooks': '钩子',
  'Shaping': '输出整形',
  'Stats, metrics & health': '统计、指标与健康检查',
  'Auth tokens & rate limits': '令牌认证与限流',
  'Workers & drain': '多进程与优雅退出',
  'Approved versions (lock)': '已批准版本（锁文件）',
};

// Promises and fix texts, English → Chinese (generated from items.mjs, then translated).
Object.assign(ZH, {
  "`--version` prints `skill-mcp <version>` and exits 0.":
    "`--version` 输出 `skill-mcp <版本号>` 并以 0 退出。",
  "server/config.c (option parsing): make --version print \"skill-mcp \" VERSION on stdout and exit 0.":
    "server/config.c（选项解析）：让 --version 在 stdout 输出 \"skill-mcp \" VERSION 并以 0 退出。",
  "`--help` prints the usage with every option and exits 0.":
    "`--help` 输出包含全部选项的用法说明并以 0 退出。",
  "server/config.c: --help must print the usage (listing --skills, --port, --auth-tokens, --hooks-dir, --context-tokens) and exit 0.":
    "server/config.c：--help 必须输出用法（列出 --skills、--port、--auth-tokens、--hooks-dir、--context-tokens）并以 0 退出。",
  "An unknown option is refused with a non-zero exit naming it.":
    "未知选项被拒绝，以非零状态退出并指出该选项。",
  "server/config.c: an unknown option must print \"unknown option 'X'\" on stderr and exit non-zero.":
    "server/config.c：未知选项必须在 stderr 输出 \"unknown option 'X'\" 并以非零状态退出。",
  "The server refuses to start when no --skills root is usable.":
    "没有任何可用的 --skills 根目录时，服务器拒绝启动。",
  "server/discovery.c / main.c: when every root is missing, exit non-zero at start-up with a message naming the root.":
    "server/discovery.c / main.c：所有根目录都不存在时，启动阶段以非零状态退出，并在消息中指出该根目录。",
  "`skill-mcp token add NAME --rpm N --file F` prints a token once and writes `NAME sha256 rpm` to a 0600 file.":
    "`skill-mcp token add NAME --rpm N --file F` 只输出一次令牌，并把 `NAME sha256 rpm` 写入权限为 0600 的文件。",
  "server/auth.c (token add): append \"NAME <sha256 hex of token> RPM\" to FILE, create it with mode 0600, print the token on stdout.":
    "server/auth.c（token add）：向 FILE 追加 \"NAME <令牌的 sha256 十六进制> RPM\"，以 0600 权限创建文件，并在 stdout 输出令牌。",
  "A malformed token file stops the server at start-up, naming the line.":
    "令牌文件格式错误时服务器在启动阶段停止，并指出出错的行。",
  "server/auth.c: on a malformed line, log \"FILE:LINE: ...\" and exit non-zero before listening.":
    "server/auth.c：遇到格式错误的行时记录 \"FILE:LINE: ...\" 并在开始监听前以非零状态退出。",
  "`skill-mcp export DIR --skills ROOT` writes index.json and every artifact; two exports are identical.":
    "`skill-mcp export DIR --skills ROOT` 写出 index.json 和每个制品；两次导出结果完全相同。",
  "server/manifest.c (export): write DIR/.well-known/agent-skills/index.json plus one artifact per skill, deterministically; exit 0.":
    "server/manifest.c（export）：确定性地写出 DIR/.well-known/agent-skills/index.json 以及每个技能的一个制品；以 0 退出。",
  "`skill-mcp validate ROOT...` lints skills citing the clause and file, exits 1 on errors, 0 on a clean root, `--json` output.":
    "`skill-mcp validate ROOT...` 检查技能并引用条款和文件，出错时以 1 退出，根目录无误时以 0 退出，支持 `--json` 输出。",
  "server/validate.c + main.c: add the `validate DIR... [--json]` subcommand (findings name clause, file, line; non-zero exit on errors).":
    "server/validate.c + main.c：增加 `validate DIR... [--json]` 子命令（每条发现注明条款、文件、行号；有错误时非零退出）。",
  "`skill-mcp list` shows discovered skills (qualified names, shadowed, broken) without a server.":
    "`skill-mcp list` 无需启动服务器即可显示发现的技能（限定名、被遮蔽的、损坏的）。",
  "server/main.c: add the `list DIR...` subcommand printing qualified names, shadowed and broken skills.":
    "server/main.c：增加 `list DIR...` 子命令，输出限定名以及被遮蔽和损坏的技能。",
  "Start-up logs `listening on http://127.0.0.1:PORT/mcp` with the real port for --port 0.":
    "启动时记录 `listening on http://127.0.0.1:PORT/mcp`，--port 0 时给出实际端口。",
  "server/main.c: after bind, log \"listening on http://HOST:PORT/PATH\" with the bound port.":
    "server/main.c：bind 之后记录 \"listening on http://HOST:PORT/PATH\"，其中为实际绑定的端口。",
  "GET /healthz answers 200 `ok` with Connection: close.":
    "GET /healthz 返回 200 `ok`，并带 Connection: close。",
  "server/http.c: serve GET /healthz as 200 \"ok\" with Connection: close.":
    "server/http.c：GET /healthz 返回 200 \"ok\" 并带 Connection: close。",
  "GET /readyz answers 200 `ready`.":
    "GET /readyz 返回 200 `ready`。",
  "server/http.c: serve GET /readyz as 200 \"ready\" while not draining.":
    "server/http.c：未进入退出排空时，GET /readyz 返回 200 \"ready\"。",
  "Any other path is 404.":
    "其他任何路径返回 404。",
  "server/http.c: answer 404 with a JSON-RPC error body for paths other than --path and the fixed GET endpoints.":
    "server/http.c：除 --path 和固定的 GET 端点外，其他路径返回 404 并附 JSON-RPC 错误体。",
  "GET on the MCP path is 405 with `Allow: POST`.":
    "对 MCP 路径发 GET 返回 405 并带 `Allow: POST`。",
  "server/http.c: a non-POST method on --path must get 405 and the header Allow: POST.":
    "server/http.c：--path 上的非 POST 方法必须返回 405 并带 Allow: POST 头。",
  "A Content-Type other than application/json is 415 with a JSON-RPC error body, id null.":
    "Content-Type 不是 application/json 时返回 415，并附 id 为 null 的 JSON-RPC 错误体。",
  "server/http.c: refuse non-JSON Content-Type with 415 and body {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{...}}.":
    "server/http.c：拒绝非 JSON 的 Content-Type，返回 415 和 {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{...}}。",
  "An Accept excluding application/json is 406; a missing Accept is fine.":
    "Accept 不包含 application/json 时返回 406；没有 Accept 头则正常处理。",
  "server/http.c: 406 when Accept lists neither application/json, application/*, nor */*; treat an absent Accept as acceptable.":
    "server/http.c：Accept 既不含 application/json、application/* 也不含 */* 时返回 406；没有 Accept 视为可接受。",
  "A body over --max-body (1 MiB) is 413.":
    "请求体超过 --max-body（1 MiB）时返回 413。",
  "server/http.c: compare Content-Length (and the bytes read) with --max-body; answer 413.":
    "server/http.c：将 Content-Length（以及实际读取的字节数）与 --max-body 比较，超出返回 413。",
  "A non-loopback Host is refused with 403 (DNS rebinding).":
    "非回环地址的 Host 被以 403 拒绝（防 DNS 重绑定）。",
  "server/http.c (Host check): on a loopback bind, refuse a Host that is not localhost/127.0.0.1/[::1] (and not in --allowed-hosts) with 403.":
    "server/http.c（Host 检查）：绑定在回环地址时，拒绝不是 localhost/127.0.0.1/[::1]（且不在 --allowed-hosts 中）的 Host，返回 403。",
  "A request without Host is refused with 403.":
    "没有 Host 头的请求被以 403 拒绝。",
  "server/http.c: treat a missing Host header as not loopback: 403.":
    "server/http.c：缺少 Host 头视为非回环：返回 403。",
  "A foreign Origin is 403; a loopback Origin is accepted.":
    "外部 Origin 返回 403；回环 Origin 被接受。",
  "server/http.c (Origin check): allow only --allowed-origins and loopback origins; others 403.":
    "server/http.c（Origin 检查）：只允许 --allowed-origins 和回环来源，其他返回 403。",
  "/healthz skips the Host check; /metrics does not.":
    "/healthz 跳过 Host 检查；/metrics 不跳过。",
  "server/http.c: run the Host/Origin check for /metrics and the discovery index, but not for /healthz and /readyz.":
    "server/http.c：对 /metrics 和发现索引执行 Host/Origin 检查，但 /healthz 和 /readyz 不执行。",
  "An invalid JSON body is -32700 with HTTP 400.":
    "无效的 JSON 请求体返回 -32700，HTTP 400。",
  "server/rpc.c: parse failures answer {\"error\":{\"code\":-32700}} with HTTP 400.":
    "server/rpc.c：解析失败返回 {\"error\":{\"code\":-32700}}，HTTP 400。",
  "A batch (array) is -32600 with HTTP 400.":
    "批量请求（数组）返回 -32600，HTTP 400。",
  "server/rpc.c: a top-level array must be -32600 (batches are not supported), HTTP 400.":
    "server/rpc.c：顶层数组必须返回 -32600（不支持批量），HTTP 400。",
  "Duplicate JSON keys are a parse error (-32700).":
    "重复的 JSON 键属于解析错误（-32700）。",
  "server/rpc.c (JSON parser): reject an object with a repeated key as -32700.":
    "server/rpc.c（JSON 解析器）：对象中出现重复键时返回 -32700。",
  "JSON nested deeper than 64 levels is -32700.":
    "嵌套超过 64 层的 JSON 返回 -32700。",
  "server/rpc.c: cap nesting at 64 levels and answer -32700.":
    "server/rpc.c：嵌套上限为 64 层，超出返回 -32700。",
  "An `id` that is neither string nor integer is -32600.":
    "既不是字符串也不是整数的 `id` 返回 -32600。",
  "server/rpc.c: validate the envelope; a float or object id is -32600.":
    "server/rpc.c：校验信封；浮点数或对象类型的 id 返回 -32600。",
  "A notification and a client response are accepted with 202 and no body.":
    "通知和客户端响应以 202 接受且没有响应体。",
  "server/rpc.c: messages without id, or with id + result/error and no method, get 202 with an empty body.":
    "server/rpc.c：没有 id 的消息，或有 id 加 result/error 但没有 method 的消息，返回 202 且响应体为空。",
  "An unknown method (legacy) is -32601 with data.method, HTTP 200.":
    "未知方法（旧版协议）返回 -32601 并带 data.method，HTTP 200。",
  "server/mcp.c: unknown methods answer -32601 with data.method; HTTP 200 on the legacy era.":
    "server/mcp.c：未知方法返回 -32601 并带 data.method；旧版协议下 HTTP 为 200。",
  "`initialize` echoes 2025-06-18 and issues no Mcp-Session-Id.":
    "`initialize` 回显 2025-06-18，且不发放 Mcp-Session-Id。",
  "server/mcp.c (initialize): return the asked version when it is 2025-06-18 or 2025-11-25; never set Mcp-Session-Id.":
    "server/mcp.c（initialize）：请求的版本是 2025-06-18 或 2025-11-25 时原样返回；永不设置 Mcp-Session-Id。",
  "`initialize` with an unknown version answers 2025-11-25.":
    "`initialize` 请求未知版本时返回 2025-11-25。",
  "server/mcp.c (initialize): any other string gets \"2025-11-25\".":
    "server/mcp.c（initialize）：其他任何字符串都返回 \"2025-11-25\"。",
  "`initialize` without protocolVersion is -32602.":
    "缺少 protocolVersion 的 `initialize` 返回 -32602。",
  "server/mcp.c (initialize): a missing protocolVersion is -32602.":
    "server/mcp.c（initialize）：缺少 protocolVersion 时返回 -32602。",
  "Capabilities: tools, resources (listChanged/subscribe false), prompts, logging, skills extension directoryRead; serverInfo and instructions.":
    "能力：tools、resources（listChanged/subscribe 为 false）、prompts、logging、skills 扩展 directoryRead；以及 serverInfo 和 instructions。",
  "server/mcp.c (capabilities): advertise exactly these, including extensions[\"io.modelcontextprotocol/skills\"]={directoryRead:true}.":
    "server/mcp.c（capabilities）：准确声明这些能力，包括 extensions[\"io.modelcontextprotocol/skills\"]={directoryRead:true}。",
  "`ping` answers an empty result.":
    "`ping` 返回空结果。",
  "server/mcp.c: ping returns {} on the legacy era.":
    "server/mcp.c：旧版协议下 ping 返回 {}。",
  "`logging/setLevel` accepts syslog levels and refuses others with -32602.":
    "`logging/setLevel` 接受 syslog 级别，其他值返回 -32602。",
  "server/mcp.c (logging/setLevel): accept the eight syslog names, -32602 otherwise.":
    "server/mcp.c（logging/setLevel）：接受八个 syslog 级别名，其他返回 -32602。",
  "An unknown MCP-Protocol-Version header is -32600 with HTTP 400.":
    "未知的 MCP-Protocol-Version 头返回 -32600，HTTP 400。",
  "server/mcp.c: accept only 2025-11-25, 2025-06-18, 2025-03-26 in the header on legacy requests.":
    "server/mcp.c：旧版请求的该头只接受 2025-11-25、2025-06-18、2025-03-26。",
  "A legacy request (no _meta version) with header 2026-07-28 is -32602 with HTTP 400.":
    "旧版请求（_meta 中无版本）带 2026-07-28 头时返回 -32602，HTTP 400。",
  "server/mcp.c: a 2026-07-28 header without the _meta version must be -32602, HTTP 400.":
    "server/mcp.c：带 2026-07-28 头但 _meta 中没有版本时必须返回 -32602，HTTP 400。",
  "Modern tools/list carries resultType complete, serverInfo _meta, ttlMs (60000 with the timer off) and cacheScope public.":
    "新版 tools/list 带 resultType complete、_meta 中的 serverInfo、ttlMs（定时器关闭时为 60000）和 cacheScope public。",
  "server/mcp.c (modern results): add resultType, _meta[\"io.modelcontextprotocol/serverInfo\"], ttlMs and cacheScope to tools/list and server/discover.":
    "server/mcp.c（新版结果）：为 tools/list 和 server/discover 加上 resultType、_meta[\"io.modelcontextprotocol/serverInfo\"]、ttlMs 和 cacheScope。",
  "MCP-Protocol-Version header differing from the _meta version is -32020 (400).":
    "MCP-Protocol-Version 头与 _meta 中的版本不一致时返回 -32020（400）。",
  "server/mcp.c (modern checks): compare the header with _meta version first; mismatch -32020, HTTP 400.":
    "server/mcp.c（新版检查）：先比较该头与 _meta 版本；不一致返回 -32020，HTTP 400。",
  "An unsupported modern version is -32022 with data.supported and data.requested.":
    "不支持的新版协议版本返回 -32022，并带 data.supported 和 data.requested。",
  "server/mcp.c: versions other than 2026-07-28 in _meta get -32022 with data {supported, requested}.":
    "server/mcp.c：_meta 中的版本不是 2026-07-28 时返回 -32022，data 为 {supported, requested}。",
  "Mcp-Method differing from the method is -32020.":
    "Mcp-Method 与实际方法不一致时返回 -32020。",
  "server/mcp.c: compare the Mcp-Method header with the JSON method.":
    "server/mcp.c：比较 Mcp-Method 头与 JSON 中的 method。",
  "Mcp-Name differing from params.name on tools/call is -32020.":
    "tools/call 的 Mcp-Name 与 params.name 不一致时返回 -32020。",
  "server/mcp.c: for tools/call and prompts/get compare Mcp-Name with params.name.":
    "server/mcp.c：对 tools/call 和 prompts/get 比较 Mcp-Name 与 params.name。",
  "A base64-encoded Mcp-Name (`=?base64?...?=`) is decoded and accepted.":
    "base64 编码的 Mcp-Name（`=?base64?...?=`）会被解码并接受。",
  "server/mcp.c: decode =?base64?X?= header values before comparing.":
    "server/mcp.c：比较前先解码 =?base64?X?= 形式的头值。",
  "clientCapabilities that is not an object is -32602 (400).":
    "clientCapabilities 不是对象时返回 -32602（400）。",
  "server/mcp.c: check _meta[\"io.modelcontextprotocol/clientCapabilities\"] is an object.":
    "server/mcp.c：检查 _meta[\"io.modelcontextprotocol/clientCapabilities\"] 是否为对象。",
  "On the modern era an unknown or legacy-only method (initialize) is -32601 with HTTP 404.":
    "新版协议下未知方法或仅限旧版的方法（initialize）返回 -32601，HTTP 404。",
  "server/mcp.c: modern-era -32601 answers use HTTP 404; initialize/ping are legacy-only.":
    "server/mcp.c：新版协议的 -32601 使用 HTTP 404；initialize/ping 仅限旧版。",
  "`server/discover` (both eras) lists the three supported versions, capabilities and instructions.":
    "`server/discover`（两种协议）列出三个支持的版本、能力和 instructions。",
  "server/mcp.c (server/discover): return supportedVersions [2025-06-18, 2025-11-25, 2026-07-28], capabilities, instructions.":
    "server/mcp.c（server/discover）：返回 supportedVersions [2025-06-18, 2025-11-25, 2026-07-28]、capabilities、instructions。",
  "An unknown tool name is -32602 with data.name, not a tool error.":
    "未知工具名返回 -32602 并带 data.name，而不是工具错误。",
  "server/tools.c (dispatch): unknown tools answer JSON-RPC -32602 with data.name.":
    "server/tools.c（分发）：未知工具以 JSON-RPC -32602 回答，并带 data.name。",
  "tools/call without a string name, or with array arguments, is -32602.":
    "tools/call 缺少字符串 name，或 arguments 为数组时，返回 -32602。",
  "server/tools.c: validate params.name (string, no NUL) and params.arguments (object or null).":
    "server/tools.c：校验 params.name（字符串、不含 NUL）和 params.arguments（对象或 null）。",
  "An unknown argument is a tool error `Unknown argument 'x'. This tool takes: ...`.":
    "未知参数是工具错误 `Unknown argument 'x'. This tool takes: ...`。",
  "server/tools.c (argument checks): refuse members not in the input schema with that message.":
    "server/tools.c（参数检查）：拒绝输入模式中没有的成员，并给出该消息。",
  "A wrong-typed argument is a tool error naming it.":
    "类型错误的参数是工具错误，并指出该参数。",
  "server/tools.c: a member of the wrong type must be refused with a message naming the argument.":
    "server/tools.c：类型错误的成员必须被拒绝，消息中指出参数名。",
  "Integer arguments accept 5.0; out-of-range (0) is refused.":
    "整数参数接受 5.0；超出范围（0）被拒绝。",
  "server/tools.c: accept whole-valued numbers for integers; enforce limit 1..500.":
    "server/tools.c：整数接受整值数字；limit 限定在 1..500。",
  "Null arguments mean {} and a null optional argument is treated as absent.":
    "arguments 为 null 等同于 {}；值为 null 的可选参数视为未提供。",
  "server/tools.c: treat arguments null as {} and optional members set to null as absent.":
    "server/tools.c：将 null 的 arguments 视为 {}，将值为 null 的可选成员视为不存在。",
  "A successful result has exactly one text block whose JSON equals structuredContent.":
    "成功结果恰好有一个文本块，其 JSON 与 structuredContent 相同。",
  "server/tools.c (result building): emit structuredContent and one {type:\"text\"} block with the same compact JSON.":
    "server/tools.c（结果构建）：输出 structuredContent 以及一个内容为相同紧凑 JSON 的 {type:\"text\"} 块。",
  "tools/list lists the six tools in order, each with name, title, description, inputSchema, outputSchema, annotations.":
    "tools/list 按顺序列出六个工具，每个都有 name、title、description、inputSchema、outputSchema、annotations。",
  "server/tools.c (tool table): keep this order and fill every member.":
    "server/tools.c（工具表）：保持该顺序并填写每个成员。",
  "Annotations: read tools readOnly+idempotent; reload/run not; destructive/openWorld only for run_skill_script.":
    "注解：读工具为 readOnly+idempotent；reload/run 不是；destructive/openWorld 仅用于 run_skill_script。",
  "server/tools.c (annotations): set readOnlyHint/idempotentHint/destructiveHint/openWorldHint as §4.1.2 lists.":
    "server/tools.c（annotations）：按 §4.1.2 设置 readOnlyHint/idempotentHint/destructiveHint/openWorldHint。",
  "Every inputSchema/outputSchema equals spec/schemas/<tool>.*.json minus $schema and $id.":
    "每个 inputSchema/outputSchema 与 spec/schemas/<tool>.*.json 去掉 $schema 和 $id 后相同。",
  "server/tools.c schemas or spec/schemas/*.json: make them identical (descriptions included).":
    "server/tools.c 中的模式或 spec/schemas/*.json：使两者完全一致（包括 description）。",
  "A cursor on tools/list is refused with -32602.":
    "tools/list 带 cursor 时以 -32602 拒绝。",
  "server/mcp.c (tools/list): the list has one page; any cursor is -32602.":
    "server/mcp.c（tools/list）：列表只有一页；任何 cursor 都返回 -32602。",
  "With --no-scripts, run_skill_script is not listed and calling it is -32602.":
    "使用 --no-scripts 时不列出 run_skill_script，调用它返回 -32602。",
  "server/tools.c: under --no-scripts drop run_skill_script from tools/list and treat it as an unknown tool.":
    "server/tools.c：--no-scripts 下从 tools/list 中去掉 run_skill_script，并将其视为未知工具。",
  "With --max-result-chars above 48000 every tool carries _meta[\"anthropic/maxResultSizeChars\"].":
    "--max-result-chars 大于 48000 时每个工具都带 _meta[\"anthropic/maxResultSizeChars\"]。",
  "server/tools.c: add _meta {\"anthropic/maxResultSizeChars\": N} to every tool when N > 48000.":
    "server/tools.c：N > 48000 时为每个工具加上 _meta {\"anthropic/maxResultSizeChars\": N}。",
  "Without query, skills come in qualified-name order; teams nest one level; hidden, too-deep and broken skills are absent.":
    "没有 query 时技能按限定名排序；团队只嵌套一层；隐藏的、过深的和损坏的技能不出现。",
  "server/discovery.c + search.c: index ROOT/skill and ROOT/team/skill only, skip dot/node_modules names, sort by qualified name.":
    "server/discovery.c + search.c：只索引 ROOT/skill 和 ROOT/team/skill，跳过点开头和 node_modules 名称，按限定名排序。",
  "An earlier root wins over a later one holding the same qualified name.":
    "较早的根目录优先于后面含有相同限定名的根目录。",
  "server/discovery.c (shadowing): keep the first root's skill and report the later one as a warning.":
    "server/discovery.c（遮蔽）：保留第一个根目录中的技能，并把后面的作为警告报告。",
  "Cards: tags list keeps strings and converts numbers; string tags split on commas; version shown only when a string.":
    "卡片：tags 列表保留字符串并转换数字；字符串形式的 tags 按逗号拆分；version 仅为字符串时显示。",
  "server/frontmatter.c / skills.c (cards): tags and version as the §2.3 table says.":
    "server/frontmatter.c / skills.c（卡片）：tags 和 version 按 §2.3 表格处理。",
  "With query, only matching skills are returned, ranked by relevance.":
    "有 query 时只返回匹配的技能，并按相关度排序。",
  "server/search.c (BM25F): return only matches, best first.":
    "server/search.c（BM25F）：只返回匹配项，最相关的在前。",
  "tags filter keeps skills with every tag, case-insensitively.":
    "tags 过滤保留带有全部标签的技能，不区分大小写。",
  "server/search.c: compare tags case-insensitively and require all of them.":
    "server/search.c：不区分大小写地比较标签，并要求全部匹配。",
  "Paging: limit gives next_cursor; following it covers all skills without overlap; no next_cursor on the last page.":
    "分页：limit 产生 next_cursor；沿着它翻页能不重不漏地覆盖所有技能；最后一页没有 next_cursor。",
  "server/search.c (paging): next_cursor = offset after the page; omit it on the last page.":
    "server/search.c（分页）：next_cursor = 本页之后的偏移量；最后一页省略。",
  "A cursor the server did not issue is a tool error; an offset past the end gives an empty page.":
    "不是服务器发出的 cursor 是工具错误；超出末尾的偏移量返回空页。",
  "server/search.c: accept only decimal offsets ≤ 100000000; larger/garbage cursors are tool errors.":
    "server/search.c：只接受 ≤ 100000000 的十进制偏移量；更大或无效的 cursor 为工具错误。",
  "load_skill returns the body without frontmatter and every heading (ATX and setext, not inside fences).":
    "load_skill 返回去掉 frontmatter 的正文以及每个标题（ATX 和 setext，不含代码围栏内的）。",
  "server/markdown.c (heading scan): count ATX and setext headings, skip fenced blocks; server/tools.c: strip frontmatter.":
    "server/markdown.c（标题扫描）：统计 ATX 和 setext 标题，跳过围栏代码块；server/tools.c：去掉 frontmatter。",
  "`section` matches case-insensitively and runs to the next heading of the same or higher level.":
    "`section` 不区分大小写匹配，内容截至下一个同级或更高级的标题。",
  "server/markdown.c (section lookup): ignore case, leading # and blanks; stop at a heading of level ≤ the match.":
    "server/markdown.c（章节查找）：忽略大小写、前导 # 和空白；在级别 ≤ 匹配标题的下一个标题处停止。",
  "An unknown section is a tool error listing the headings.":
    "未知章节是工具错误，并列出现有标题。",
  "server/tools.c (load_skill): on no match, list the existing headings in the error text.":
    "server/tools.c（load_skill）：找不到时在错误文本中列出现有标题。",
  "`scripts` lists every file under scripts/ with the declared execution values (not bounded), `default` applied.":
    "`scripts` 列出 scripts/ 下每个文件及声明的 execution 值（未经限幅），并应用 `default`。",
  "server/tools.c (load_skill scripts): lookup full path then path under scripts/, fall back to default; report declared values.":
    "server/tools.c（load_skill scripts）：先按完整路径再按 scripts/ 下路径查找，回退到 default；报告声明的值。",
  "`files` excludes SKILL.md, dot names, node_modules, __pycache__ and links leaving the skill; keeps links inside.":
    "`files` 不含 SKILL.md、点开头的名称、node_modules、__pycache__ 以及指向技能外的链接；保留指向技能内部的链接。",
  "server/discovery.c (file walk): skip ignored names, drop symlinks leaving the skill, keep in-skill symlinks as files.":
    "server/discovery.c（文件遍历）：跳过忽略的名称，丢弃指向技能外的符号链接，把技能内部的符号链接当作普通文件。",
  "A bare name shared by two teams fails listing both qualified names.":
    "两个团队共用的裸名称调用失败，并列出两个限定名。",
  "server/skills.c (name resolution): \"'billing' names several skills: acme/billing, finance/billing. Call again with the qualified name.\"":
    "server/skills.c（名称解析）：\"'billing' names several skills: acme/billing, finance/billing. Call again with the qualified name.\"",
  "Qualified names resolve, and a unique bare team name resolves to its skill.":
    "限定名可以解析，唯一的团队裸名称解析到对应技能。",
  "server/skills.c: exact qualified name first, then a unique bare name.":
    "server/skills.c：先精确匹配限定名，再匹配唯一的裸名称。",
  "An unknown name suggests the closest matches.":
    "未知名称会提示最接近的匹配项。",
  "server/skills.c: on no match, name up to 3 closest names (edit distance), else point at list_skills.":
    "server/skills.c：找不到时给出最多 3 个最接近的名称（编辑距离），否则引导调用 list_skills。",
  "A name over 200 bytes is refused without lookup.":
    "超过 200 字节的名称不经查找直接拒绝。",
  "server/skills.c: refuse names > 200 bytes or with NUL before resolving.":
    "server/skills.c：解析前拒绝超过 200 字节或含 NUL 的名称。",
  "A broken skill (no description, duplicate key) is not served; the others are.":
    "损坏的技能（缺少 description、重复键）不提供服务；其他技能不受影响。",
  "server/frontmatter.c + discovery.c: mark the skill broken (error problem) and leave it out of the snapshot.":
    "server/frontmatter.c + discovery.c：把该技能标为损坏（error 问题），并将其排除在快照之外。",
  "A text file comes back as utf-8 with size and truncated false.":
    "文本文件以 utf-8 返回，带 size，truncated 为 false。",
  "server/tools.c (read_skill_file): return {name, path, size, encoding:\"utf-8\", content, truncated:false}.":
    "server/tools.c（read_skill_file）：返回 {name, path, size, encoding:\"utf-8\", content, truncated:false}。",
  "A binary file (NUL bytes) comes back as base64.":
    "二进制文件（含 NUL 字节）以 base64 返回。",
  "server/tools.c: bytes that are not UTF-8 or hold NUL are returned base64 with encoding \"base64\".":
    "server/tools.c：非 UTF-8 或含 NUL 的字节以 base64 返回，encoding 为 \"base64\"。",
  "max_bytes cuts the content and sets truncated; size is the whole file.":
    "max_bytes 截断内容并设置 truncated；size 为整个文件的大小。",
  "server/tools.c: read at most max_bytes, report size of the whole file and truncated:true.":
    "server/tools.c：最多读取 max_bytes，报告整个文件的 size 以及 truncated:true。",
  "A missing file or a folder is a tool error listing the skill's files.":
    "文件不存在或是文件夹时为工具错误，并列出技能的文件。",
  "server/tools.c: on ENOENT/EISDIR list up to 30 of the skill's files in the error.":
    "server/tools.c：ENOENT/EISDIR 时在错误中列出技能的最多 30 个文件。",
  "A symlink staying inside the skill is served as a regular file.":
    "留在技能内部的符号链接作为普通文件提供。",
  "server/jail.c: openat2 RESOLVE_BENEATH lets in-skill links through.":
    "server/jail.c：openat2 RESOLVE_BENEATH 允许技能内部的链接通过。",
  "max_bytes over 1048576 is refused.":
    "超过 1048576 的 max_bytes 被拒绝。",
  "server/tools.c: range-check max_bytes 1..1048576.":
    "server/tools.c：检查 max_bytes 范围 1..1048576。",
  "server/jail.c (path check): refuse empty, absolute, \"..\", dot components, backslash, NUL, __pycache__/node_modules; open with openat2 RESOLVE_BENEATH.":
    "server/jail.c（路径检查）：拒绝空路径、绝对路径、\"..\"、点开头的组成部分、反斜杠、NUL、__pycache__/node_modules；用 openat2 RESOLVE_BENEATH 打开。",
  "resources/read refuses a traversing URI with -32602 Resource not found.":
    "resources/read 以 -32602 Resource not found 拒绝越界的 URI。",
  "server/resources.c: pass URI paths through the jail; answer -32602 \"Resource not found\" with data.uri.":
    "server/resources.c：URI 路径也要经过路径隔离；返回 -32602 \"Resource not found\" 并带 data.uri。",
  "resources/read refuses a percent-encoded traversal and a link leaving the skill.":
    "resources/read 拒绝百分号编码的越界路径以及指向技能外的链接。",
  "server/resources.c: decode percent-encoding before the jail check; symlinks leaving the skill are refused at open.":
    "server/resources.c：在隔离检查前解码百分号编码；指向技能外的符号链接在打开时被拒绝。",
  "resources/list lists each served skill's SKILL.md as skill://<qualified-name>/SKILL.md.":
    "resources/list 以 skill://<限定名>/SKILL.md 列出每个已服务技能的 SKILL.md。",
  "server/resources.c (resources/list): one entry per skill, 100 per page.":
    "server/resources.c（resources/list）：每个技能一项，每页 100 项。",
  "An invalid resources/list cursor is -32602.":
    "无效的 resources/list cursor 返回 -32602。",
  "server/resources.c: only numeric cursors; others -32602.":
    "server/resources.c：只接受数字 cursor；其他返回 -32602。",
  "resources/templates/list gives skill://{skill}/SKILL.md and skill://{skill}/{+path}.":
    "resources/templates/list 给出 skill://{skill}/SKILL.md 和 skill://{skill}/{+path}。",
  "server/resources.c (templates): return exactly these two URI templates.":
    "server/resources.c（templates）：恰好返回这两个 URI 模板。",
  "resources/read of SKILL.md returns the whole file, frontmatter included, as text.":
    "resources/read 读取 SKILL.md 时以文本返回整个文件，包括 frontmatter。",
  "server/resources.c (resources/read): serve SKILL.md whole as text.":
    "server/resources.c（resources/read）：以文本形式完整提供 SKILL.md。",
  "Aliases skill://<name> and skill://<name>/files/<path> are served.":
    "别名 skill://<name> 和 skill://<name>/files/<path> 可以访问。",
  "server/resources.c: map skill://NAME to its SKILL.md and skill://NAME/files/P to P.":
    "server/resources.c：把 skill://NAME 映射到其 SKILL.md，把 skill://NAME/files/P 映射到 P。",
  "A binary file is a base64 blob with a MIME type.":
    "二进制文件以带 MIME 类型的 base64 blob 返回。",
  "server/resources.c: non-text files go out as blob (base64) with mimeType from the extension.":
    "server/resources.c：非文本文件以 blob（base64）返回，mimeType 取自扩展名。",
  "Percent-encoding in the URI is decoded.":
    "URI 中的百分号编码会被解码。",
  "server/resources.c: percent-decode the path before lookup.":
    "server/resources.c：查找前先对路径做百分号解码。",
  "Unknown skill, unknown file, or a non-skill:// URI is -32602 Resource not found with data.uri.":
    "未知技能、未知文件或非 skill:// 的 URI 返回 -32602 Resource not found 并带 data.uri。",
  "server/resources.c: -32602 \"Resource not found\" with data.uri for each case.":
    "server/resources.c：以上每种情况都返回 -32602 \"Resource not found\" 并带 data.uri。",
  "skills/list entries carry uri, all frontmatter fields (license, metadata passed through) and resources with SKILL.md first.":
    "skills/list 的条目带 uri、全部 frontmatter 字段（license、metadata 原样传递），以及以 SKILL.md 开头的 resources。",
  "server/skillsext.c (skills/list): pass every frontmatter field through; list SKILL.md first then every served file.":
    "server/skillsext.c（skills/list）：原样传递每个 frontmatter 字段；先列 SKILL.md，再列每个提供的文件。",
  "Each resource digest is sha256 of exactly the bytes resources/read serves.":
    "每个资源的 digest 是 resources/read 所返回字节的 sha256。",
  "server/skillsext.c: digest = \"sha256:\" + hex over the file bytes; size = byte count.":
    "server/skillsext.c：digest = \"sha256:\" + 文件字节的十六进制哈希；size = 字节数。",
  "A skill whose frontmatter name differs from its folder is omitted and reported in _meta omitted.":
    "frontmatter 中 name 与文件夹名不同的技能被省略，并在 _meta omitted 中报告。",
  "server/skillsext.c: leave such skills out and add {uri, reason} to _meta[\"io.modelcontextprotocol.skills/omitted\"].":
    "server/skillsext.c：省略这类技能，并向 _meta[\"io.modelcontextprotocol.skills/omitted\"] 添加 {uri, reason}。",
  "skills/get returns {skill: entry} for a served skill, omitted ones included.":
    "skills/get 对任何已服务的技能（包括被省略的）返回 {skill: 条目}。",
  "server/skillsext.c (skills/get): look up by canonical SKILL.md URI for every served skill.":
    "server/skillsext.c（skills/get）：对每个已服务技能按规范的 SKILL.md URI 查找。",
  "resources/directory/read lists a folder's children in name order, folders as inode/directory.":
    "resources/directory/read 按名称顺序列出文件夹的直接子项，文件夹标为 inode/directory。",
  "server/skillsext.c (directory/read): direct children sorted by name; folders mimeType \"inode/directory\".":
    "server/skillsext.c（directory/read）：直接子项按名称排序；文件夹的 mimeType 为 \"inode/directory\"。",
  "A traversing directory URI is -32602.":
    "越界的目录 URI 返回 -32602。",
  "server/skillsext.c: run directory URIs through the jail.":
    "server/skillsext.c：目录 URI 也要经过路径隔离。",
  "skills/list carries resultType, ttlMs and cacheScope on the legacy era too.":
    "skills/list 在旧版协议下同样带 resultType、ttlMs 和 cacheScope。",
  "server/skillsext.c: add resultType/ttlMs/cacheScope on both eras.":
    "server/skillsext.c：两种协议下都加上 resultType/ttlMs/cacheScope。",
  "Digests are never stale: editing a file changes its digest at once.":
    "digest 永不过期：修改文件后其 digest 立即改变。",
  "server/skillsext.c: re-fstat each file when an entry is served and re-hash when mtime or size changed.":
    "server/skillsext.c：提供条目时对每个文件重新 fstat，mtime 或大小变化时重新计算哈希。",
  "prompts/list: one prompt per skill by qualified name, with an optional `task` argument and the frontmatter title.":
    "prompts/list：每个技能一个提示词，以限定名命名，带可选参数 `task` 和 frontmatter 中的 title。",
  "server/mcp.c (prompts/list): name = qualified name, arguments [{name:\"task\", required:false}], title from a string `title`.":
    "server/mcp.c（prompts/list）：name = 限定名，arguments [{name:\"task\", required:false}]，title 取自字符串 `title`。",
  "prompts/get returns the body as one user message with \"\\n\\nTask: <task>\" appended.":
    "prompts/get 以一条 user 消息返回正文，并追加 \"\\n\\nTask: <task>\"。",
  "server/mcp.c (prompts/get): one user message; append \"\\n\\nTask: \" + task when non-empty.":
    "server/mcp.c（prompts/get）：一条 user 消息；task 非空时追加 \"\\n\\nTask: \" + task。",
  "prompts/get with an ambiguous or unknown name is -32602.":
    "prompts/get 使用有歧义或未知的名称时返回 -32602。",
  "server/mcp.c (prompts/get): resolve names as §3.3; failures are -32602.":
    "server/mcp.c（prompts/get）：按 §3.3 解析名称；失败返回 -32602。",
  "GET index.json is the v0.2.0 index: $schema and the skills/list skills in qualified-name order with name, description, type, url, digest.":
    "GET index.json 返回 v0.2.0 索引：$schema 以及 skills/list 中的技能，按限定名排序，带 name、description、type、url、digest。",
  "server/manifest.c (index): emit {$schema, skills:[{name, description, type, url, digest}]} in qualified-name order.":
    "server/manifest.c（索引）：按限定名顺序输出 {$schema, skills:[{name, description, type, url, digest}]}。",
  "A skill-md artifact is served as text/markdown with a matching digest and no Content-Encoding.":
    "skill-md 制品以 text/markdown 提供，digest 匹配且没有 Content-Encoding。",
  "server/manifest.c: serve SKILL.md bytes as \"text/markdown; charset=utf-8\", never compressed; digest over those bytes.":
    "server/manifest.c：以 \"text/markdown; charset=utf-8\" 提供 SKILL.md 字节，永不压缩；digest 基于这些字节。",
  "An archive artifact is a gzip'd tar (application/gzip) with one top folder, matching its digest, same bytes every time.":
    "archive 制品是一个 gzip 压缩的 tar（application/gzip），只有一个顶层文件夹，digest 匹配，每次字节相同。",
  "server/manifest.c (archive): deterministic pax tar (sorted, mtime 0, uid/gid 0), gzip without name/time.":
    "server/manifest.c（归档）：确定性的 pax tar（排序、mtime 0、uid/gid 0），gzip 不含文件名/时间。",
  "Other paths under the prefix are 404.":
    "该前缀下的其他路径返回 404。",
  "server/manifest.c: unknown paths under /.well-known/agent-skills/ are 404.":
    "server/manifest.c：/.well-known/agent-skills/ 下的未知路径返回 404。",
  "The discovery index passes the Host check (403 for a foreign Host).":
    "发现索引同样执行 Host 检查（外部 Host 返回 403）。",
  "server/http.c: apply the Host/Origin check to /.well-known/agent-skills/.":
    "server/http.c：对 /.well-known/agent-skills/ 执行 Host/Origin 检查。",
  "`export` writes the same bytes the server serves for the same tree.":
    "对同一目录树，`export` 写出的字节与服务器提供的相同。",
  "server/manifest.c: share one code path between export and the HTTP handler.":
    "server/manifest.c：export 与 HTTP 处理共用同一段代码。",
  "A script exiting 0 is `ok` with stdout, exit_code 0, request_id r-<16 hex>, the values in effect, isError false.":
    "以 0 退出的脚本为 `ok`，带 stdout、exit_code 0、request_id r-<16 位十六进制>、生效的超时值，isError 为 false。",
  "server/script.c (result): fill every REQUIRED member; status ok when exit 0.":
    "server/script.c（结果）：填写每个必需成员；退出码为 0 时 status 为 ok。",
  "`script` may be scripts/<path> or a bare file name; a nested scripts path runs too.":
    "`script` 可以是 scripts/<路径> 或裸文件名；scripts 下的嵌套路径也可运行。",
  "server/script.c (script path): map a bare name to scripts/<name>; accept scripts/sub/x.":
    "server/script.c（脚本路径）：把裸名称映射为 scripts/<name>；接受 scripts/sub/x。",
  "A non-zero exit is `failed` with exit_code, output kept, structuredContent and isError together, hint naming the exit code and stderr.":
    "非零退出为 `failed`，带 exit_code，保留输出，同时有 structuredContent 和 isError，hint 指出退出码并提示看 stderr。",
  "server/script.c: status failed, isError true with structuredContent; hint \"exited with 3 ... read stderr\".":
    "server/script.c：status 为 failed，isError 为 true 且带 structuredContent；hint 为 \"exited with 3 ... read stderr\"。",
  "A script killed by a signal is `failed` with exit_code null and signal SIGSEGV.":
    "被信号杀死的脚本为 `failed`，exit_code 为 null，signal 为 SIGSEGV。",
  "server/script.c: on WIFSIGNALED set exit_code null and signal name.":
    "server/script.c：WIFSIGNALED 时 exit_code 设为 null 并给出信号名。",
  "A silent script is `stalled` after its stall_timeout with silent_for and a hint quoting the last line and \"blocked, not slow\".":
    "长时间无输出的脚本在 stall_timeout 后为 `stalled`，带 silent_for，hint 引用最后一行输出并说明“被阻塞，而不是慢”。",
  "server/runner.c (stall timer): kill after stall_timeout without output; hint with silence, last line, \"blocked, not slow\".":
    "server/runner.c（停滞计时器）：无输出达到 stall_timeout 时终止；hint 说明静默时长、最后一行，以及 \"blocked, not slow\"。",
  "A script running past its timeout is `timeout`, output before the kill returned; hint (≤15 s) says do not retry with more time.":
    "超过 timeout 的脚本为 `timeout`，返回终止前的输出；hint（≤15 秒）说明不要用更长的超时重试。",
  "server/runner.c (ceiling): kill at timeout; keep output; hint for ≤15 s \"do not retry with a longer timeout; submit and poll\".":
    "server/runner.c（上限）：到达 timeout 时终止；保留输出；≤15 秒时 hint 为 \"do not retry with a longer timeout; submit and poll\"。",
  "A caller timeout may only lower the value; ≤ 0 is refused.":
    "调用方的 timeout 只能降低该值；≤ 0 被拒绝。",
  "server/script.c: min(declared, caller); refuse caller values ≤ 0 as a tool error.":
    "server/script.c：取 min(声明值, 调用方值)；调用方的值 ≤ 0 时以工具错误拒绝。",
  "A declared timeout above --max-script-timeout is lowered to it; a `mode:` key has no effect.":
    "声明的 timeout 超过 --max-script-timeout 时被降到该值；`mode:` 键不起作用。",
  "server/script.c (values in effect): clamp timeout to --max-script-timeout (600).":
    "server/script.c（生效值）：把 timeout 限制在 --max-script-timeout（600）以内。",
  "Output past --max-output-bytes is drained and counted: truncated true, stdout_bytes the real count.":
    "超过 --max-output-bytes 的输出被读取丢弃并计数：truncated 为 true，stdout_bytes 为实际字节数。",
  "server/runner.c (output capture): keep up to --max-output-bytes, count the rest, set truncated.":
    "server/runner.c（输出捕获）：最多保留 --max-output-bytes，其余计数，并设置 truncated。",
  "Invalid UTF-8 is replaced by U+FFFD with utf8_repaired true.":
    "无效的 UTF-8 被替换为 U+FFFD，utf8_repaired 为 true。",
  "server/runner.c: repair invalid UTF-8 and set utf8_repaired.":
    "server/runner.c：修复无效 UTF-8 并设置 utf8_repaired。",
  "Scripts see exactly the allowlisted environment: fixed PATH, SKILL_* variables, proxies; no server secrets, no HOOK_*.":
    "脚本只看到白名单内的环境：固定的 PATH、SKILL_* 变量、代理；看不到服务器的机密，也看不到 HOOK_*。",
  "server/runner.c (environment): build envp from scratch per §6.3.1; never inherit the server env.":
    "server/runner.c（环境）：按 §6.3.1 从零构建 envp；绝不继承服务器环境。",
  "The caller's `env` values reach the script.":
    "调用方 `env` 中的值会传给脚本。",
  "server/script.c: add the caller env (after checks) to the script environment.":
    "server/script.c：把（检查过的）调用方 env 加入脚本环境。",
  "server/script.c (env name check): apply the §6.5.1 prefix and exact lists case-insensitively; refuse with a tool error naming the variable.":
    "server/script.c（env 名称检查）：不区分大小写地应用 §6.5.1 的前缀和精确名单；以指出该变量的工具错误拒绝。",
  "Arguments are data (argument vector, no shell).":
    "参数是数据（参数向量，不经过 shell）。",
  "server/runner.c: execve with argv; never pass through /bin/sh -c.":
    "server/runner.c：用 argv 调用 execve；绝不经过 /bin/sh -c。",
  "`stdin` is passed to the script; without it stdin is at EOF.":
    "`stdin` 会传给脚本；没有时 stdin 处于 EOF。",
  "server/runner.c: write stdin to a pipe then close it; with no stdin give /dev/null-like EOF.":
    "server/runner.c：把 stdin 写入管道后关闭；没有 stdin 时提供类似 /dev/null 的 EOF。",
  "Working directory is the skill folder; HOME and TMPDIR are a fresh scratch folder removed after the call.":
    "工作目录是技能文件夹；HOME 和 TMPDIR 指向一个新建的临时文件夹，调用结束后删除。",
  "server/runner.c: chdir to the skill folder; mkdtemp a scratch HOME/TMPDIR and remove it after.":
    "server/runner.c：chdir 到技能文件夹；用 mkdtemp 创建临时 HOME/TMPDIR，结束后删除。",
  "A .js script runs with node.":
    ".js 脚本用 node 运行。",
  "server/script.c (interpreters): built-in .js → node resolved at start-up.":
    "server/script.c（解释器）：内置 .js → 启动时解析出的 node。",
  "server/script.c + jail.c: resolve the script with openat2 RESOLVE_BENEATH from scripts/; refuse with a reason as a tool error.":
    "server/script.c + jail.c：从 scripts/ 用 openat2 RESOLVE_BENEATH 解析脚本；以带原因的工具错误拒绝。",
  "Numbers in `args` are refused.":
    "`args` 中的数字被拒绝。",
  "server/script.c: args must be strings; a number is a tool error naming args.":
    "server/script.c：args 必须是字符串；数字是指出 args 的工具错误。",
  "Read tools keep answering while a script runs.":
    "脚本运行期间读工具仍然正常应答。",
  "server/loop.c: run scripts off the HTTP threads; never hold a thread per running script.":
    "server/loop.c：脚本不在 HTTP 线程上运行；不为每个运行中的脚本占用一个线程。",
  "With a progressToken and Accept text/event-stream, stderr lines stream as notifications/progress and the result is the last SSE event.":
    "带 progressToken 且 Accept 含 text/event-stream 时，stderr 每行作为 notifications/progress 流式发送，结果是最后一个 SSE 事件。",
  "server/mcp.c + runner.c (SSE): answer text/event-stream with Cache-Control no-cache, X-Accel-Buffering no; one progress event per stderr line.":
    "server/mcp.c + runner.c（SSE）：以 text/event-stream 应答，带 Cache-Control no-cache、X-Accel-Buffering no；每行 stderr 一个 progress 事件。",
  "notifications/cancelled stops the running script; the call ends `failed` with a hint saying it was cancelled.":
    "notifications/cancelled 停止正在运行的脚本；调用以 `failed` 结束，hint 说明已被取消。",
  "server/mcp.c (cancellation): map requestId to the running script and stop its process group; hint \"cancelled\".":
    "server/mcp.c（取消）：把 requestId 映射到运行中的脚本并停止其进程组；hint 含 \"cancelled\"。",
  "With all slots taken past --script-queue-timeout the call is `busy`, exit_code null, nothing ran.":
    "所有槽位被占用超过 --script-queue-timeout 时调用为 `busy`，exit_code 为 null，什么都没运行。",
  "server/runner.c (slot queue): wait in order up to --script-queue-timeout, then status busy with \"retry shortly\".":
    "server/runner.c（槽位队列）：按顺序最多等待 --script-queue-timeout，然后以 busy 结束并提示 \"retry shortly\"。",
  "Every script outcome is counted in skill_server_stats.scripts.":
    "每种脚本结果都计入 skill_server_stats.scripts。",
  "server/stats.c: count started/ok/failed/stalled/timeout/busy per outcome.":
    "server/stats.c：按结果分别统计 started/ok/failed/stalled/timeout/busy。",
  "A pre hook gets {skill, script, args, mode:\"sync\", caller, request_id, env_keys} (names only) and the server's HOOK_* variables.":
    "pre 钩子收到 {skill, script, args, mode:\"sync\", caller, request_id, env_keys}（只有名称）以及服务器的 HOOK_* 变量。",
  "server/hooks.c (pre input): build the JSON input as §7.4.1; pass HOOK_* to hooks only.":
    "server/hooks.c（pre 输入）：按 §7.4.1 构建 JSON 输入；HOOK_* 只传给钩子。",
  "Pre hooks may add env and replace args; notes are joined; scripts never see HOOK_*.":
    "pre 钩子可以添加 env 和替换 args；note 会被拼接；脚本永远看不到 HOOK_*。",
  "server/hooks.c (pre answer): apply env (checked), args, note; join notes with a space.":
    "server/hooks.c（pre 应答）：应用（经检查的）env、args、note；note 之间用空格连接。",
  "Order global pre → skill pre → script → skill post → global post: the skill post redaction is what the global post sees.":
    "顺序为 全局 pre → 技能 pre → 脚本 → 技能 post → 全局 post：全局 post 看到的是技能 post 脱敏后的内容。",
  "server/hooks.c: run the chain in that order; post hook {\"result\":{...}} members replace the result's.":
    "server/hooks.c：按此顺序运行钩子链；post 钩子 {\"result\":{...}} 中的成员替换结果中的对应成员。",
  "A global pre hook exiting > 0 denies: status denied, exit_code null, empty output, hint \"Denied by the global pre hook (<path>): <stderr>\"; nothing else runs.":
    "全局 pre 钩子以 > 0 退出即拒绝：status 为 denied，exit_code 为 null，输出为空，hint 为 \"Denied by the global pre hook (<路径>): <stderr>\"；其余都不运行。",
  "server/hooks.c (deny): stop the chain; result denied with that hint; no post hooks.":
    "server/hooks.c（拒绝）：停止钩子链；结果为 denied 并带该 hint；不运行 post 钩子。",
  "A skill pre hook denial quotes the JSON `reason`.":
    "技能 pre 钩子的拒绝会引用 JSON 中的 `reason`。",
  "server/hooks.c: prefer a string `reason` from stdout JSON, else stderr, else the exit code.":
    "server/hooks.c：优先使用 stdout JSON 中的字符串 `reason`，其次 stderr，最后是退出码。",
  "A post hook exiting > 0 fails the call and withholds the script output.":
    "post 钩子以 > 0 退出时调用失败，并扣留脚本输出。",
  "server/hooks.c (post failure): status failed, stdout/stderr emptied, hint quoting the reason.":
    "server/hooks.c（post 失败）：status 为 failed，清空 stdout/stderr，hint 引用原因。",
  "A post hook setting an invalid status fails the call.":
    "post 钩子设置无效的 status 时调用失败。",
  "server/hooks.c (merge check): status must stay one of the six; otherwise failed with the stage and path.":
    "server/hooks.c（合并检查）：status 必须仍是六种之一；否则为 failed，并指出阶段和路径。",
  "A pre hook answering non-JSON fails the call naming the stage and path; the server keeps serving.":
    "pre 钩子返回非 JSON 时调用失败，并指出阶段和路径；服务器继续服务。",
  "server/hooks.c: parse failures → failed, hint \"<stage> hook (<path>) ...\"; keep serving.":
    "server/hooks.c：解析失败 → failed，hint 为 \"<stage> hook (<path>) ...\"；继续服务。",
  "A pre hook adding a refused env name (LD_PRELOAD) fails the call.":
    "pre 钩子添加被禁止的 env 名称（LD_PRELOAD）时调用失败。",
  "server/hooks.c: check hook-added env names with the §6.5 rules.":
    "server/hooks.c：按 §6.5 规则检查钩子添加的 env 名称。",
  "With two pre.* candidates the first in name order runs and the other is a warning.":
    "有两个 pre.* 候选时，按名称顺序运行第一个，另一个作为警告报告。",
  "server/hooks.c / discovery.c: pick the first candidate, add a warning problem for the others.":
    "server/hooks.c / discovery.c：选第一个候选，为其余候选添加 warning 问题。",
  "Hooks are not scripts: run_skill_script refuses hooks/pre.js.":
    "钩子不是脚本：run_skill_script 拒绝 hooks/pre.js。",
  "server/script.c: only files under scripts/ run.":
    "server/script.c：只运行 scripts/ 下的文件。",
  "An oversized load_skill result is cut to the budget and gains _truncated {fields, original_tokens, kept_tokens, hint} with a section hint.":
    "过大的 load_skill 结果被裁剪到预算内，并加上 _truncated {fields, original_tokens, kept_tokens, hint}，hint 建议使用 section。",
  "server/shape.c: fit each copy to --context-tokens × --context-share; add _truncated with the load_skill hint naming `section`.":
    "server/shape.c：每份副本裁剪到 --context-tokens × --context-share；加上 _truncated，load_skill 的 hint 提到 `section`。",
  "A cut Markdown string keeps heading lines and carries the omission marker.":
    "被裁剪的 Markdown 字符串保留标题行并带省略标记。",
  "server/shape.c (markdown cut): keep every heading, water-fill bodies, end cut bodies with \"[... N characters omitted: narrow the call ...]\".":
    "server/shape.c（Markdown 裁剪）：保留每个标题，按注水法分配正文，被裁剪的正文以 \"[... N characters omitted: narrow the call ...]\" 结尾。",
  "A cut result keeps every member with its type; short strings and numbers are never cut.":
    "被裁剪的结果保留每个成员及其类型；短字符串和数字永不裁剪。",
  "server/shape.c: never drop members; leave strings < 64 bytes, numbers, booleans, null intact.":
    "server/shape.c：绝不删除成员；小于 64 字节的字符串、数字、布尔值和 null 保持不变。",
  "A result that fits is not changed (no _truncated).":
    "未超预算的结果不被修改（没有 _truncated）。",
  "server/shape.c: return results under budget untouched.":
    "server/shape.c：预算内的结果原样返回。",
  "A cut list_skills page sets next_cursor just past the last card kept; paging skips nothing.":
    "被裁剪的 list_skills 页把 next_cursor 设在最后保留的卡片之后；翻页不会遗漏。",
  "server/shape.c + search.c: after dropping cards, set next_cursor = offset + cards kept.":
    "server/shape.c + search.c：删除卡片后设置 next_cursor = 偏移量 + 保留的卡片数。",
  "A shaped run_skill_script keeps status, exit_code and request_id and gains _truncated; the text block equals structuredContent.":
    "被整形的 run_skill_script 保留 status、exit_code 和 request_id 并加上 _truncated；文本块与 structuredContent 相同。",
  "server/shape.c: shape after hooks; keep short fields; hint suggests an argument printing less.":
    "server/shape.c：在钩子之后整形；保留短字段；hint 建议使用输出更少的脚本参数。",
  "With default limits each copy of a result (structured JSON, text block) stays within 48,000 characters.":
    "默认限制下结果的每份副本（结构化 JSON 与文本块）不超过 48,000 个字符。",
  "server/shape.c: fit each copy to --max-result-chars (48000 UTF-16 units).":
    "server/shape.c：每份副本裁剪到 --max-result-chars（48000 个 UTF-16 单元）。",
  "A cut read_skill_file hint names max_bytes.":
    "被裁剪的 read_skill_file 的 hint 提到 max_bytes。",
  "server/shape.c: per-tool hint for read_skill_file mentions max_bytes.":
    "server/shape.c：read_skill_file 的专用 hint 提到 max_bytes。",
  "skill_server_stats: server {name, version, uptime_s}, index {generation, skills, errors, warnings, roots, last_refresh_at, last_refresh_ms, problems}, tools per name.":
    "skill_server_stats：server {name, version, uptime_s}、index {generation, skills, errors, warnings, roots, last_refresh_at, last_refresh_ms, problems}，以及按工具名统计的 tools。",
  "server/stats.c: fill the result as §5.5.1.":
    "server/stats.c：按 §5.5.1 填写结果。",
  "index.problems: missing root (error), broken skills (error), shadowed (warning), symlink out (warning), name mismatch (warning).":
    "index.problems：缺失的根目录（error）、损坏的技能（error）、被遮蔽（warning）、指向外部的符号链接（warning）、名称不一致（warning）。",
  "server/discovery.c (problems): record each as {skill, path, level, message}.":
    "server/discovery.c（问题）：每项记录为 {skill, path, level, message}。",
  "reload_skills with nothing changed publishes no new snapshot (generation_after = generation_before).":
    "没有任何变化时 reload_skills 不发布新快照（generation_after = generation_before）。",
  "server/discovery.c (forced rescan for reload_skills/SIGHUP): when no skill was added, removed or changed and the problems are the same, keep the current snapshot and its generation. docs/internals.md (\"and on every forced rescan\") must then be corrected too; alternatively, if a forced rescan is meant to always bump, amend RFC-SKILL-1 §3.9.1 to say so.":
    "server/discovery.c（reload_skills/SIGHUP 的强制重扫）：没有技能增加、删除或变化且问题列表相同时，保留当前快照及其 generation。同时需修正 docs/internals.md（\"and on every forced rescan\"）；或者，如果强制重扫本就应当总是递增，则修改 RFC-SKILL-1 §3.9.1 写明这一点。",
  "reload_skills after adding a skill publishes a higher generation with the skill in `added`.":
    "新增技能后 reload_skills 发布更高的 generation，并在 `added` 中列出该技能。",
  "server/discovery.c (rescan): diff against the current snapshot, publish atomically with generation+1, list qualified names in added.":
    "server/discovery.c（重扫）：与当前快照比较差异，以 generation+1 原子发布，在 added 中列出限定名。",
  "The --refresh-interval timer keeps the generation while nothing changes and picks up a new skill within one interval.":
    "--refresh-interval 定时器在没有变化时保持 generation 不变，并在一个周期内发现新技能。",
  "server/loop.c / discovery.c (refresh tick): re-stat every interval; publish only on change.":
    "server/loop.c / discovery.c（刷新周期）：每个周期重新 stat；只在有变化时发布。",
  "A skill that breaks after being served keeps its previous version (\"serving the previous version\").":
    "已服务的技能损坏后继续提供其上一版本（\"serving the previous version\"）。",
  "server/discovery.c: on a parse error for a served skill keep the old entry and report \"...; serving the previous version\".":
    "server/discovery.c：已服务技能解析出错时保留旧条目，并报告 \"...; serving the previous version\"。",
  "/metrics is Prometheus text with requests, tool calls, scripts_total{outcome}, scripts_live, index and uptime series.":
    "/metrics 是 Prometheus 文本，包含请求数、工具调用、scripts_total{outcome}、scripts_live、索引和运行时长等序列。",
  "server/stats.c (metrics): expose the metric names listed in docs/deploy.md.":
    "server/stats.c（指标）：导出 docs/deploy.md 中列出的指标名。",
  "stats.skills counts per-skill usage.":
    "stats.skills 统计每个技能的使用情况。",
  "server/stats.c: count load_skill/read_skill_file calls, scripts and errors per skill.":
    "server/stats.c：按技能统计 load_skill/read_skill_file 调用次数、脚本次数和错误数。",
  "Without a token: 401 with WWW-Authenticate: Bearer realm=\"skill-mcp\" (no error=).":
    "没有令牌：返回 401 和 WWW-Authenticate: Bearer realm=\"skill-mcp\"（不带 error=）。",
  "server/http.c reply(): the caller (the auth branch of the request handler) passes rq only when no Authorization header was sent, but reply() tests `rq && rq->client`, and rq->client is NULL there, so error=\"invalid_token\" is always added. Test `rq` instead (or an explicit \"token given\" flag): no header → `Bearer realm=\"skill-mcp\"`; a bad token → `Bearer realm=\"skill-mcp\", error=\"invalid_token\"` (RFC 6750 §3.1).":
    "server/http.c reply()：请求处理函数的认证分支只在没有 Authorization 头时才传入 rq，但 reply() 判断的是 `rq && rq->client`，而此时 rq->client 为 NULL，因此总会加上 error=\"invalid_token\"。应改为判断 `rq`（或显式的“已提供令牌”标志）：没有该头 → `Bearer realm=\"skill-mcp\"`；令牌错误 → `Bearer realm=\"skill-mcp\", error=\"invalid_token\"`（RFC 6750 §3.1）。",
  "A wrong token: 401 with error=\"invalid_token\".":
    "令牌错误：返回 401 并带 error=\"invalid_token\"。",
  "server/auth.c: add error=\"invalid_token\" when a token was given but matched nothing.":
    "server/auth.c：提供了令牌但没有匹配项时加上 error=\"invalid_token\"。",
  "A valid token is accepted; the scheme is case-insensitive.":
    "有效令牌被接受；认证方案名不区分大小写。",
  "server/auth.c: match \"bearer\" case-insensitively; compare sha256 in constant time.":
    "server/auth.c：不区分大小写地匹配 \"bearer\"；以常量时间比较 sha256。",
  "/healthz needs no token.":
    "/healthz 不需要令牌。",
  "server/http.c: probes skip auth.":
    "server/http.c：探针跳过认证。",
  "A client with rpm gets RateLimit-* headers; past its bucket it gets 429 with Retry-After ≥ 1.":
    "设置了 rpm 的客户端会收到 RateLimit-* 头；令牌桶耗尽后返回 429 并带 Retry-After ≥ 1。",
  "server/auth.c (token bucket): rpm capacity, refill rpm/60 per s; 429 + Retry-After when empty.":
    "server/auth.c（令牌桶）：容量为 rpm，每秒补充 rpm/60；桶空时返回 429 + Retry-After。",
  "Limits are per client: another client is still served.":
    "限流按客户端计算：其他客户端仍能得到服务。",
  "server/auth.c: keep one bucket per client id.":
    "server/auth.c：每个客户端 id 一个令牌桶。",
  "Over --max-scripts-per-client a call is `busy` at once and nothing runs.":
    "超过 --max-scripts-per-client 时调用立即返回 `busy`，什么都不运行。",
  "server/runner.c (per-client cap): count slots per client id; answer busy immediately.":
    "server/runner.c（按客户端上限）：按客户端 id 统计槽位；立即回答 busy。",
  "With --workers 2 the master logs \"2 worker(s)\" and serves requests.":
    "使用 --workers 2 时主进程记录 \"2 worker(s)\" 并正常处理请求。",
  "server/main.c (master): fork N workers on one socket; log \"(N worker(s) x T threads ...)\".":
    "server/main.c（主进程）：在同一个 socket 上 fork N 个工作进程；记录 \"(N worker(s) x T threads ...)\"。",
  "Script counters describe the whole instance whichever worker answers.":
    "无论哪个工作进程应答，脚本计数器都描述整个实例。",
  "server/stats.c: keep tools.* and scripts.* in shared memory across workers.":
    "server/stats.c：tools.* 和 scripts.* 放在各工作进程共享的内存中。",
  "A killed worker is restarted by the master; the instance keeps serving.":
    "被杀死的工作进程由主进程重启；实例持续服务。",
  "server/main.c (master supervision): waitpid the worker, log \"worker N restarted (pid P)\", fork a new one.":
    "server/main.c（主进程监管）：waitpid 工作进程，记录 \"worker N restarted (pid P)\"，再 fork 一个新的。",
  "SIGHUP to the master is forwarded to every worker.":
    "发给主进程的 SIGHUP 被转发给每个工作进程。",
  "server/main.c: on SIGHUP log \"master SIGHUP: forwarded to N workers\" and signal each worker.":
    "server/main.c：收到 SIGHUP 时记录 \"master SIGHUP: forwarded to N workers\" 并向每个工作进程发信号。",
  "SIGTERM to the master stops every worker and exits 0.":
    "发给主进程的 SIGTERM 停止所有工作进程并以 0 退出。",
  "server/main.c: forward SIGTERM, wait for workers, exit 0.":
    "server/main.c：转发 SIGTERM，等待工作进程，以 0 退出。",
  "On SIGTERM a script in flight finishes normally, its call is answered, and the process exits 0.":
    "收到 SIGTERM 时正在运行的脚本正常完成，其调用得到应答，进程以 0 退出。",
  "server/loop.c (drain): stop accepting, let requests in flight finish up to --shutdown-timeout, then exit 0.":
    "server/loop.c（排空）：停止接受新连接，让进行中的请求在 --shutdown-timeout 内完成，然后以 0 退出。",
  "A script still running at --shutdown-timeout is stopped and its caller gets an answer.":
    "到 --shutdown-timeout 仍在运行的脚本被停止，其调用方仍会得到应答。",
  "server/loop.c (drain timeout): SIGTERM the script process groups, answer the calls, exit 0.":
    "server/loop.c（排空超时）：向脚本进程组发 SIGTERM，回答这些调用，以 0 退出。",
  "With --lock, an approved skill is served and an unapproved one is listed as quarantined and refused, naming `skill-mcp lock approve`.":
    "使用 --lock 时，已批准的技能照常提供；未批准的技能仍被列出但标记为隔离并被拒绝，提示 `skill-mcp lock approve`。",
  "server/lock.c (lock_gate) and server/tools.c (gated): judge every entry when the snapshot is built; mark its card quarantined and refuse load/read/run with the approving command.":
    "server/lock.c（lock_gate）与 server/tools.c（gated）：构建快照时判定每个技能；把其卡片标为隔离，并以批准命令拒绝加载、读取和运行。",
  "`skill-mcp lock diff` marks a new script with `!` and WIDENS and exits 1; after `lock approve` it exits 0.":
    "`skill-mcp lock diff` 用 `!` 和 WIDENS 标出新脚本并以 1 退出；`lock approve` 之后以 0 退出。",
  "server/lock.c (lock_changes, cli_report): compare the manifest with the approved file list; scripts/ and hooks/ additions widen; exit 1 when anything is unapproved.":
    "server/lock.c（lock_changes、cli_report）：将清单与已批准的文件列表比较；scripts/ 与 hooks/ 的新增视为扩权；有未批准内容时以 1 退出。",
  "With --lock, skills/list leaves a quarantined skill out and names it under _meta omitted with the reason.":
    "使用 --lock 时，skills/list 不列出被隔离的技能，而是在 _meta 的 omitted 中列出它并说明原因。",
  "server/skillsext.c (skillsext_list): ask skills_gate_of for each entry; a quarantined one goes to io.modelcontextprotocol.skills/omitted with \"quarantined: \" and the reason.":
    "server/skillsext.c（skillsext_list）：对每个条目调用 skills_gate_of；被隔离的条目放入 io.modelcontextprotocol.skills/omitted，原因以 \"quarantined: \" 开头。",
  "`skill-mcp lock gc` removes nothing while the lock changed within the grace, and never what the lock names.":
    "`skill-mcp lock gc` 在锁文件于宽限期内改动过时不删除任何内容，且从不删除锁文件引用的内容。",
  "server/lock.c (cli_gc): stat the lock first and stop when it is younger than --grace; skip every blob, manifest and tree an entry names.":
    "server/lock.c（cli_gc）：先检查锁文件，若其新于 --grace 则停止；跳过条目引用的每个 blob、清单和目录树。",
  "A malformed lock stops the server at start-up, naming the file and line.":
    "格式错误的锁文件使服务器在启动时停止，并指出文件和行号。",
  "server/lock.c (lock_parse): refuse the file with \"FILE:LINE: ...\" and exit 2 before listening.":
    "server/lock.c（lock_parse）：以 \"FILE:LINE: ...\" 拒绝该文件，并在监听前以 2 退出。",
});

// Items generated in loops: translated by pattern.
const WHY = {
  'a .. component': '含 .. 组成部分的路径', 'an absolute path': '绝对路径', 'a dotfile': '点文件',
  'a dot folder': '点文件夹中的文件', 'a symlink leaving the skill': '指向技能外的符号链接', 'a backslash': '含反斜杠的路径',
  'node_modules': 'node_modules 中的文件', 'an empty path': '空路径', 'a .. path': '含 .. 的路径',
  'a path outside scripts/': 'scripts/ 之外的路径', 'a hooks file': '钩子文件', 'SKILL.md': 'SKILL.md',
  'a folder': '文件夹', 'a suffix without interpreter': '没有解释器的后缀', 'a missing script': '不存在的脚本',
};
const PATTERNS = [
  [/^read_skill_file refuses (.+) \((.*)\)\.$/s, (m) => `read_skill_file 拒绝${WHY[m[1]] ?? m[1]}（${m[2]}）。`],
  [/^A caller env name (\S+) is refused and nothing runs\.$/s, (m) => `调用方 env 名称 ${m[1]} 被拒绝，什么都不运行。`],
  [/^run_skill_script refuses (.+) \((.*)\) as a tool error; nothing runs\.$/s, (m) => `run_skill_script 以工具错误拒绝${WHY[m[1]] ?? m[1]}（${m[2]}）；什么都不运行。`],
];

export function tr(lang, key) {
  if (UI[key]) return UI[key][lang === 'zh' ? 1 : 0];
  if (lang !== 'zh') return key;
  if (ZH[key]) return ZH[key];
  for (const [re, f] of PATTERNS) { const m = re.exec(key); if (m) return f(m); }
  return key;
}

/** English strings with no Chinese text (for the self-check in run.mjs --check-i18n). */
export function untranslated(keys) { return keys.filter((k) => tr('zh', k) === k && !/^[a-z_]+$/.test(k)); }
