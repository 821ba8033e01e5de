-- Neovim's own LSP client against ddpguard-lsp, headless:
--   DDPGUARD_LSP="python -m ddpguard.lsp --ddpguard ..." DDPGUARD_FILE=... \
--   DDPGUARD_REPORT=... DDPGUARD_FIXED=... \
--   nvim --headless --clean -n -u NONE -c 'luafile nvim_code_action.lua'
-- Opens the file, waits for the check's diagnostic, prints it and the code
-- actions the server offers for it to DDPGUARD_REPORT, applies the one that
-- sets broadcast_buffers, waits for the diagnostic to clear (the server
-- checks the edited buffer), and writes the buffer to DDPGUARD_FIXED. Exits
-- non-zero (with the reason in the report) on any failure or timeout.
local report = assert(io.open(os.getenv("DDPGUARD_REPORT"), "w"))
local check = "ddp-multiple-forward-before-backward"

local function main()
  local file = os.getenv("DDPGUARD_FILE")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()

  -- The diagnostics as the server sent them: a code action request quotes them.
  local published = nil
  local default_handler = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
    if result and vim.uri_to_fname(result.uri) == vim.api.nvim_buf_get_name(bufnr) then
      published = result.diagnostics
    end
    return default_handler(err, result, ctx, config)
  end

  local client_id = vim.lsp.start_client({
    name = "ddpguard-lsp",
    cmd = vim.split(os.getenv("DDPGUARD_LSP"), " ", { trimempty = true }),
    root_dir = vim.fn.fnamemodify(file, ":h"),
  })
  assert(client_id, "the language server did not start")
  vim.lsp.buf_attach_client(bufnr, client_id)

  local function ours()
    for _, d in ipairs(published or {}) do
      if d.code == check then
        return d
      end
    end
  end
  assert(vim.wait(60000, function() return ours() ~= nil end, 50),
    "no " .. check .. " diagnostic within 60 s")
  local diagnostic = ours()
  local r = diagnostic.range
  report:write(string.format("DIAGNOSTIC %d:%d-%d:%d %s: %s\n", r.start.line + 1,
    r.start.character + 1, r["end"].line + 1, r["end"].character + 1,
    diagnostic.source, diagnostic.message))
  -- The same diagnostic as Neovim shows it (0-based line and column).
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == check then
      report:write(string.format("SHOWN %d:%d %s\n", d.lnum + 1, d.col + 1,
        vim.diagnostic.severity[d.severity]))
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
      report:write("ACTION " .. action.kind .. " " .. action.title .. "\n")
      if action.edit and action.title:find("broadcast_buffers", 1, true) then
        chosen = action
      end
    end
  end
  assert(chosen, "no code action sets broadcast_buffers")
  vim.lsp.util.apply_workspace_edit(chosen.edit, "utf-16")
  report:write("APPLIED " .. chosen.title .. "\n")

  -- Neovim sends the edit; the server checks the new text and clears it.
  assert(vim.wait(60000, function()
    return published ~= nil and ours() == nil
  end, 50), "the diagnostic did not clear within 60 s of the fix")
  local left = 0
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == "ddpguard" then
      left = left + 1
    end
  end
  report:write("CLEARED " .. left .. " ddpguard diagnostics left\n")
  vim.cmd("write! " .. vim.fn.fnameescape(os.getenv("DDPGUARD_FIXED")))
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
