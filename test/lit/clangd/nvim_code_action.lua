-- Neovim's own LSP client against ddpguard-clangd, headless:
--   DDPGUARD_CLANGD=... DDPGUARD_FILE=... DDPGUARD_REPORT=... DDPGUARD_FIXED=... \
--   nvim --headless --clean -n -u NONE -c 'luafile nvim_code_action.lua'
-- Opens the file, waits for the check's diagnostic, prints it and the code
-- actions clangd offers for it to DDPGUARD_REPORT, applies the one that sets
-- broadcast_buffers, and writes the edited buffer to DDPGUARD_FIXED. Exits
-- non-zero (with the reason in the report) on any failure or timeout.
local report = assert(io.open(os.getenv("DDPGUARD_REPORT"), "w"))

local function main()
  local file = os.getenv("DDPGUARD_FILE")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()

  -- The diagnostics as clangd sent them: a code action request must quote them.
  local published = nil
  local default_handler = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
    if result and vim.uri_to_fname(result.uri) == vim.api.nvim_buf_get_name(bufnr) then
      published = result.diagnostics
    end
    return default_handler(err, result, ctx, config)
  end

  local client_id = vim.lsp.start_client({
    name = "ddpguard-clangd",
    cmd = { os.getenv("DDPGUARD_CLANGD"), "--log=error" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
  })
  assert(client_id, "the language server did not start")
  vim.lsp.buf_attach_client(bufnr, client_id)

  local function ours()
    for _, d in ipairs(published or {}) do
      if d.code == "ddp-multiple-forward-before-backward" then
        return d
      end
    end
  end
  assert(vim.wait(180000, function() return ours() ~= nil end, 100),
    "no ddp-multiple-forward-before-backward diagnostic within 180 s")
  local diagnostic = ours()
  local r = diagnostic.range
  report:write(string.format("DIAGNOSTIC %d:%d-%d:%d %s\n", r.start.line + 1,
    r.start.character + 1, r["end"].line + 1, r["end"].character + 1,
    vim.split(diagnostic.message, "\n")[1]))
  -- The same diagnostic as Neovim shows it (0-based line and column).
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == diagnostic.code then
      report:write(string.format("SHOWN %d:%d\n", d.lnum + 1, d.col + 1))
    end
  end

  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = diagnostic.range,
    context = { diagnostics = { diagnostic } },
  }, 30000)
  assert(responses, "no answer to textDocument/codeAction within 30 s")
  local chosen = nil
  for _, response in pairs(responses) do
    assert(not response.err, vim.inspect(response.err))
    for _, action in ipairs(response.result or {}) do
      report:write("ACTION " .. action.title .. "\n")
      if action.edit and action.title:find("broadcast_buffers", 1, true) then
        chosen = action
      end
    end
  end
  assert(chosen, "no code action sets broadcast_buffers")
  vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
  vim.cmd("write! " .. vim.fn.fnameescape(os.getenv("DDPGUARD_FIXED")))
  report:write("APPLIED " .. chosen.title .. "\n")
end

local ok, err = pcall(main)
if not ok then
  report:write("FAILED " .. tostring(err) .. "\n")
  io.stderr:write("nvim_code_action.lua: " .. tostring(err) .. "\n")
end
report:close()
for _, client in pairs(vim.lsp.get_active_clients()) do
  client.stop()
end
vim.cmd(ok and "qall!" or "cquit! 1")
