# placeholder: the real nnal/atb/set_env.sh was not captured (samples INDEX.md §12)
