# `cmake --install build --prefix DIR`: the binary in DIR/bin, the resources it looks up
# (src/base/resources.cpp) in DIR/share/paceline: configs/ (model configs, cost profiles) and the
# Qwen3 and Llama-3.1 tokenizers that scripts/setup fetches into third_party/ (skipped when
# absent). The binary finds them from its own location, so the installed tree can be moved.
include(GNUInstallDirs)
set(PACELINE_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/paceline)
# The data folder as seen from the binary's folder ("../share/paceline" by default).
file(RELATIVE_PATH PACELINE_DATA_FROM_BIN /prefix/${CMAKE_INSTALL_BINDIR}
     /prefix/${PACELINE_INSTALL_DATADIR})
target_compile_definitions(paceline_base PRIVATE
  PACELINE_DATA_FROM_BIN="${PACELINE_DATA_FROM_BIN}")

install(TARGETS paceline RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs DESTINATION ${PACELINE_INSTALL_DATADIR})
foreach(tokenizer qwen3-tokenizer llama3_1-tokenizer)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/third_party/${tokenizer}
          DESTINATION ${PACELINE_INSTALL_DATADIR}/third_party OPTIONAL)
endforeach()
