-- plugin/devtools_tools.lua: defines :DevTools and the <Plug> mappings
-- when Neovim starts. It only defines them and an exit hook; the plugin
-- (and the C core) load on first use, so an editor that never calls it
-- pays nothing. It must never start a browser or touch the network by
-- itself. Without a built core the plugin says so in one line
-- (devtools_tools.nvim.build), not with require's traceback.

if vim.g.loaded_devtools_tools then return end
vim.g.loaded_devtools_tools = true

local function plugin() return require("devtools_tools.nvim") end

vim.api.nvim_create_user_command("DevTools", function(cmd)
  plugin().command(cmd.args)
end, {
  nargs = "+",
  desc = "devtools_tools: call the developer tools a web page exposes",
  complete = function(arglead, cmdline) return plugin().complete(arglead, cmdline) end,
})

-- <Plug> mappings, for users to map keys to (:help devtools_tools-mappings)
local plugs = {
  { "(devtools-tools)", "<Cmd>DevTools tools<CR>", "pick a tool of the page (vim.ui.select)" },
  { "(devtools-list)", "<Cmd>DevTools list<CR>", "the tool list, devtools://tools" },
  { "(devtools-cancel)", "<Cmd>DevTools cancel<CR>", "stop the running command" },
  { "(devtools-open-tool)", function() plugin().open_tool_under_cursor() end,
    "the argument buffer of the tool on this line of devtools://tools" },
}
for _, p in ipairs(plugs) do
  vim.keymap.set("n", "<Plug>" .. p[1], p[2], { silent = true, desc = "devtools_tools: " .. p[3] })
end

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("devtools_tools", { clear = true }),
  callback = function()
    -- Only if it was loaded: nothing to end otherwise. (A require that
    -- failed leaves a mark there that is no table.)
    local m = package.loaded["devtools_tools.nvim"]
    if type(m) == "table" then m._on_exit() end
  end,
})
