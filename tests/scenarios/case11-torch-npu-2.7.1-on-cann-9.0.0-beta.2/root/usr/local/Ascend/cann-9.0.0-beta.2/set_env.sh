# CANN 8.5 set_env.sh (content not captured)
