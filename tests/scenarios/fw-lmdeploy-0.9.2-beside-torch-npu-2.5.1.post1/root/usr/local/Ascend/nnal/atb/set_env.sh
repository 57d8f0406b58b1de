# NNAL set_env.sh (content not captured)
