dnl hgx_na_plugin.m4 -- how a network plugin joins the build.
dnl
dnl A plugin's section of configure.ac calls:
dnl   HGX_NA_PLUGIN_LOG([ID], [name], [PARENT])  once per log subsystem it logs to:
dnl       HGX_SUBSYS_ID in its code, "name" in HG_LOG_SUBSYS, below HGX_SUBSYS_PARENT
dnl       (NA for the plugin itself). Called whether or not the plugin is built, so
dnl       that log settings mean the same in every build.
dnl   HGX_NA_PLUGIN([ops_symbol])  when the plugin is built: its ops table (which
dnl       brings its name, protocols, aliases and log subsystem) joins the NA
dnl       plugin table. An alias (another NA implementation's name, such as
dnl       Mercury's "na+sm") is served by the highest-ranked built plugin that
dnl       declares it, so a plugin joins with no change to the core.
dnl HGX_NA_PLUGINS_DEFINE, once after every plugin, writes both lists into config.h
dnl as X-macro lists (HGX_NA_PLUGIN_LIST, HGX_LOG_PLUGIN_SUBSYS) for na.c and
dnl hgx_log.h, so that no source file names a plugin.
AC_DEFUN([HGX_NA_PLUGIN_LOG],
    [hgx_log_plugin_subsys="$hgx_log_plugin_subsys X($1, \"$2\", $3)"])
AC_DEFUN([HGX_NA_PLUGIN], [hgx_na_plugin_list="$hgx_na_plugin_list X($1)"])
AC_DEFUN([HGX_NA_PLUGINS_DEFINE], [
    AC_DEFINE_UNQUOTED([HGX_NA_PLUGIN_LIST], [$hgx_na_plugin_list],
        [Ops tables of the built NA plugins, as X(symbol) entries])
    AC_DEFINE_UNQUOTED([HGX_LOG_PLUGIN_SUBSYS], [$hgx_log_plugin_subsys],
        [Log subsystems of the NA plugins, as X(ID, "name", PARENT) entries])])
