-- plugin/devtools_tools.lua: defines :DevTools when Neovim starts. It only
-- defines the command and an exit hook; the plugin (and the C core) load on
-- first use, so an editor that never calls it pays nothing. It must never
-- start a browser or touch the network by itself.

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

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("devtools_tools", { clear = true }),
  callback = function()
    -- Only if it was loaded: nothing to end otherwise.
    local m = package.loaded["devtools_tools.nvim"]
    if m then m._on_exit() end
  end,
})
