" syntax/devtools_tools.vim: colours of the :DevTools tool list
" (devtools://tools): groups and their frames, tools and their parameters,
" discovery's warnings. Display only; nothing here reads the page.
if exists("b:current_syntax")
  finish
endif

syntax match devtoolsToolsHeader  /\%1l.*/
syntax match devtoolsToolsHint    /\%2l.*/
syntax match devtoolsToolsWarning /^warning: .*/
syntax match devtoolsToolsGroup   /^\S.*  \[frame [^]]*\]$/ contains=devtoolsToolsFrame
syntax match devtoolsToolsFrame   /\[frame [^]]*\]$/ contained
syntax match devtoolsToolsTool    /^  \S[^(]*(.*)$/ contains=devtoolsToolsParams
syntax match devtoolsToolsParams  /(.*)$/ contained

highlight default link devtoolsToolsHeader  Title
highlight default link devtoolsToolsHint    Comment
highlight default link devtoolsToolsWarning WarningMsg
highlight default link devtoolsToolsGroup   Statement
highlight default link devtoolsToolsFrame   Comment
highlight default link devtoolsToolsTool    Function
highlight default link devtoolsToolsParams  Identifier

let b:current_syntax = "devtools_tools"
