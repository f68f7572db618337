/**
 * The names and categories synthetic events are made of, shared by the seed (`tallyhouse seed
 * --events`, which sends them to ClickHouse as array parameters) and the ingest bench's load
 * generator (bench/ingest/events.ts, which builds request bodies from them), so the events the
 * two write look alike. Pure data.
 */
export const TRACK_NAMES: readonly string[] = [
  'login', 'logout', 'signup', 'feature_used', 'search_performed', 'item_viewed', 'item_added_to_cart',
  'checkout_started', 'checkout_completed', 'invite_sent', 'report_exported', 'dashboard_viewed',
  'filter_applied', 'file_uploaded', 'comment_posted', 'subscription_upgraded', 'subscription_cancelled',
  'notification_clicked', 'onboarding_step_completed', 'integration_connected', 'api_key_created',
  'workspace_created', 'project_archived', 'settings_changed', 'trial_started',
];
export const SECTIONS: readonly string[] = ['dashboard', 'projects', 'reports', 'settings', 'billing', 'docs', 'pricing', 'blog', 'integrations', 'team'];
export const SCREENS: readonly string[] = ['Home', 'Inbox', 'ProjectList', 'ProjectDetail', 'Settings', 'Profile', 'Search', 'Checkout'];
export const PLANS: readonly string[] = ['free', 'starter', 'pro', 'business', 'enterprise'];
/** `context.locale` of events (survey respondents' locales are src/seed/vocabulary.ts's). */
export const EVENT_LOCALES: readonly string[] = ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'es-ES', 'pt-BR', 'ja-JP', 'nl-NL'];
export const ZONES: readonly string[] = ['Europe/Paris', 'Europe/Berlin', 'America/New_York', 'America/Los_Angeles', 'Asia/Tokyo', 'Europe/London', 'America/Sao_Paulo'];
export const SOURCES: readonly string[] = ['google', 'newsletter', 'twitter', 'linkedin', 'direct', 'partner'];
export const AGENTS: readonly string[] = ['support-assistant', 'sql-copilot', 'docs-helper'];
