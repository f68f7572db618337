/**
 * The words and categories synthetic survey responses are made of. Pure data: the seed turns it
 * into lookup tables that travel to ClickHouse as query parameters, so no value is ever spliced
 * into the generated SQL.
 */

/** A locale respondents use; `weight` is relative across all locales. */
export interface LocaleEntry {
  readonly locale: string;
  readonly language: string;
  readonly country: string;
  readonly timezone: string;
  /** Standard UTC offset in minutes, so "9 in the morning" lands at 9 local time. */
  readonly utcOffsetMinutes: number;
  readonly weight: number;
}

export const LOCALES: readonly LocaleEntry[] = [
  { locale: 'en-US', language: 'en', country: 'US', timezone: 'America/New_York', utcOffsetMinutes: -300, weight: 16 },
  { locale: 'en-US', language: 'en', country: 'US', timezone: 'America/Chicago', utcOffsetMinutes: -360, weight: 6 },
  { locale: 'en-US', language: 'en', country: 'US', timezone: 'America/Los_Angeles', utcOffsetMinutes: -480, weight: 8 },
  { locale: 'en-GB', language: 'en', country: 'GB', timezone: 'Europe/London', utcOffsetMinutes: 0, weight: 8 },
  { locale: 'en-CA', language: 'en', country: 'CA', timezone: 'America/Toronto', utcOffsetMinutes: -300, weight: 3 },
  { locale: 'en-AU', language: 'en', country: 'AU', timezone: 'Australia/Sydney', utcOffsetMinutes: 600, weight: 3 },
  { locale: 'en-IN', language: 'en', country: 'IN', timezone: 'Asia/Kolkata', utcOffsetMinutes: 330, weight: 3 },
  { locale: 'fr-FR', language: 'fr', country: 'FR', timezone: 'Europe/Paris', utcOffsetMinutes: 60, weight: 12 },
  { locale: 'fr-CA', language: 'fr', country: 'CA', timezone: 'America/Montreal', utcOffsetMinutes: -300, weight: 2 },
  { locale: 'fr-BE', language: 'fr', country: 'BE', timezone: 'Europe/Brussels', utcOffsetMinutes: 60, weight: 1.5 },
  { locale: 'de-DE', language: 'de', country: 'DE', timezone: 'Europe/Berlin', utcOffsetMinutes: 60, weight: 9 },
  { locale: 'de-AT', language: 'de', country: 'AT', timezone: 'Europe/Vienna', utcOffsetMinutes: 60, weight: 1.5 },
  { locale: 'de-CH', language: 'de', country: 'CH', timezone: 'Europe/Zurich', utcOffsetMinutes: 60, weight: 1.5 },
  { locale: 'es-ES', language: 'es', country: 'ES', timezone: 'Europe/Madrid', utcOffsetMinutes: 60, weight: 5 },
  { locale: 'es-MX', language: 'es', country: 'MX', timezone: 'America/Mexico_City', utcOffsetMinutes: -360, weight: 4 },
  { locale: 'es-AR', language: 'es', country: 'AR', timezone: 'America/Argentina/Buenos_Aires', utcOffsetMinutes: -180, weight: 1.5 },
  { locale: 'ja-JP', language: 'ja', country: 'JP', timezone: 'Asia/Tokyo', utcOffsetMinutes: 540, weight: 6 },
  { locale: 'pt-BR', language: 'pt', country: 'BR', timezone: 'America/Sao_Paulo', utcOffsetMinutes: -180, weight: 4.5 },
  { locale: 'pt-PT', language: 'pt', country: 'PT', timezone: 'Europe/Lisbon', utcOffsetMinutes: 0, weight: 1 },
  { locale: 'it-IT', language: 'it', country: 'IT', timezone: 'Europe/Rome', utcOffsetMinutes: 60, weight: 3.5 },
  { locale: 'nl-NL', language: 'nl', country: 'NL', timezone: 'Europe/Amsterdam', utcOffsetMinutes: 60, weight: 2.5 },
  { locale: 'nl-BE', language: 'nl', country: 'BE', timezone: 'Europe/Brussels', utcOffsetMinutes: 60, weight: 0.8 },
];

/** Languages in a fixed order; texts and choice labels are indexed by this order. */
export const LANGUAGES = ['en', 'fr', 'de', 'es', 'ja', 'pt', 'it', 'nl'] as const;
export type Language = (typeof LANGUAGES)[number];

/** A device a respondent answers from; it fixes the `support`, `os`, `platform` and channel. */
export interface DeviceEntry {
  readonly support: 'desktop' | 'mobile';
  readonly os: string;
  readonly platform: 'web' | 'ios' | 'android';
  readonly userAgent: string;
  readonly weight: number;
}

export const DEVICES: readonly DeviceEntry[] = [
  { support: 'desktop', os: 'Windows', platform: 'web', weight: 30, userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' },
  { support: 'desktop', os: 'Windows', platform: 'web', weight: 5, userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0' },
  { support: 'desktop', os: 'macOS', platform: 'web', weight: 13, userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' },
  { support: 'desktop', os: 'macOS', platform: 'web', weight: 7, userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15' },
  { support: 'desktop', os: 'Linux', platform: 'web', weight: 4, userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' },
  { support: 'desktop', os: 'ChromeOS', platform: 'web', weight: 3, userAgent: 'Mozilla/5.0 (X11; CrOS x86_64 15917.71.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' },
  { support: 'mobile', os: 'iOS', platform: 'ios', weight: 12, userAgent: 'Acme/4.12.0 (iPhone; iOS 17.5; Scale/3.00)' },
  { support: 'mobile', os: 'iOS', platform: 'web', weight: 8, userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1' },
  { support: 'mobile', os: 'Android', platform: 'android', weight: 11, userAgent: 'Acme/4.12.0 (Linux; Android 14; Pixel 8)' },
  { support: 'mobile', os: 'Android', platform: 'web', weight: 7, userAgent: 'Mozilla/5.0 (Linux; Android 14; SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36' },
];

/** One channel per platform, in this order. */
export const PLATFORMS = ['web', 'ios', 'android'] as const;

/** Pages (or app screens) the survey was shown on; the first ones are the busiest. */
export const PAGE_TITLES = [
  'Dashboard',
  'Reports',
  'Settings',
  'Billing',
  'Team members',
  'Integrations',
  'Onboarding',
  'Checkout',
  'Pricing',
  'Help center',
] as const;

/** Relative frequency of local hours 0..23: night lull, morning ramp, afternoon plateau, evening tail. */
export const HOUR_WEIGHTS = [
  0.6, 0.4, 0.3, 0.25, 0.25, 0.4, 0.9, 2.0, 4.0, 6.0, 7.0, 7.2,
  6.5, 6.8, 7.2, 7.0, 6.4, 5.5, 4.2, 3.5, 3.0, 2.4, 1.6, 1.0,
];

/** Score weights. NPS 0..10: many promoters, a hump at 7-8, a tail of detractors. */
export const NPS_WEIGHTS = [2.5, 1.0, 1.3, 1.8, 2.2, 4.5, 5.5, 10.0, 16.0, 22.0, 33.0];
/** CSAT 1..5: mostly satisfied, few very unhappy. */
export const CSAT_WEIGHTS = [5.0, 6.0, 14.0, 35.0, 40.0];
/** CES 1..7 (7 = very easy): skewed easy, with a small cluster of hard experiences. */
export const CES_WEIGHTS = [3.0, 4.0, 6.0, 11.0, 19.0, 27.0, 30.0];

/** Choice question "What best describes your role?": keys and per-language labels (LANGUAGES order). */
export const ROLE_KEYS = ['developer', 'product_manager', 'designer', 'marketing', 'support', 'other'] as const;
export const ROLE_WEIGHTS = [30, 22, 10, 14, 12, 12];
export const ROLE_LABELS: Readonly<Record<Language, readonly string[]>> = {
  en: ['Developer', 'Product manager', 'Designer', 'Marketing', 'Customer support', 'Other'],
  fr: ['Développeur', 'Chef de produit', 'Designer', 'Marketing', 'Support client', 'Autre'],
  de: ['Entwickler', 'Produktmanager', 'Designer', 'Marketing', 'Kundensupport', 'Sonstiges'],
  es: ['Desarrollador', 'Gerente de producto', 'Diseñador', 'Marketing', 'Atención al cliente', 'Otro'],
  ja: ['開発者', 'プロダクトマネージャー', 'デザイナー', 'マーケティング', 'カスタマーサポート', 'その他'],
  pt: ['Desenvolvedor', 'Gerente de produto', 'Designer', 'Marketing', 'Suporte ao cliente', 'Outro'],
  it: ['Sviluppatore', 'Product manager', 'Designer', 'Marketing', 'Assistenza clienti', 'Altro'],
  nl: ['Ontwikkelaar', 'Productmanager', 'Ontwerper', 'Marketing', 'Klantenservice', 'Anders'],
};

/** Free-text comments by language and sentiment; a response sometimes combines two of one kind. */
export interface Comments {
  readonly positive: readonly string[];
  readonly neutral: readonly string[];
  readonly negative: readonly string[];
}

export const COMMENTS: Readonly<Record<Language, Comments>> = {
  en: {
    positive: [
      'Love the new dashboard, it saves me hours every week.',
      'Super easy to set up, our whole team uses it daily.',
      'Great product and the support team is amazing.',
      'The reports are exactly what our managers needed.',
      'Fast, reliable and the integrations just work.',
      'Best tool we adopted this year, keep it up!',
      'Exporting data to our warehouse is effortless now.',
    ],
    neutral: [
      'It does the job but the navigation could be simpler.',
      'Good overall, although some features are hard to find.',
      'Pricing is a bit high for a small team like ours.',
      'Works fine, I would like more customization options.',
      'Decent product, the mobile app needs some polish.',
      'OK for now, waiting for the promised API improvements.',
    ],
    negative: [
      'The app is slow and crashes when I open large reports.',
      'Billing was confusing and I was charged twice.',
      'Support took a week to answer my ticket.',
      'Too many bugs since the last release, very frustrating.',
      'I could not find how to export my data, terrible onboarding.',
      'The login keeps failing on mobile.',
    ],
  },
  fr: {
    positive: [
      "J'adore le nouveau tableau de bord, il me fait gagner un temps fou.",
      'Très simple à prendre en main, toute l’équipe l’utilise.',
      'Excellent produit et un support très réactif.',
      'Les rapports sont clairs et précis, bravo !',
      'Rapide, fiable et les intégrations fonctionnent parfaitement.',
      'Le meilleur outil que nous ayons adopté cette année.',
    ],
    neutral: [
      'Ça fait le travail mais la navigation pourrait être plus simple.',
      'Bien dans l’ensemble, certaines fonctions sont difficiles à trouver.',
      'Le prix est un peu élevé pour une petite équipe.',
      'Correct, j’aimerais plus d’options de personnalisation.',
      "L'application mobile mérite encore quelques améliorations.",
    ],
    negative: [
      "L'application est lente et plante avec les gros rapports.",
      'La facturation est confuse, j’ai été débité deux fois.',
      'Le support a mis une semaine à répondre.',
      'Trop de bugs depuis la dernière mise à jour, très frustrant.',
      'Impossible de trouver comment exporter mes données.',
    ],
  },
  de: {
    positive: [
      'Das neue Dashboard ist großartig und spart mir viel Zeit.',
      'Sehr einfach einzurichten, das ganze Team nutzt es täglich.',
      'Tolles Produkt und ein sehr hilfsbereiter Support.',
      'Die Berichte sind genau das, was wir gebraucht haben.',
      'Schnell, zuverlässig und die Integrationen funktionieren einwandfrei.',
    ],
    neutral: [
      'Erfüllt seinen Zweck, aber die Navigation könnte einfacher sein.',
      'Insgesamt gut, manche Funktionen sind schwer zu finden.',
      'Für ein kleines Team ist der Preis etwas hoch.',
      'Funktioniert, ich wünsche mir mehr Anpassungsmöglichkeiten.',
      'Die mobile App braucht noch etwas Feinschliff.',
    ],
    negative: [
      'Die App ist langsam und stürzt bei großen Berichten ab.',
      'Die Abrechnung ist verwirrend, ich wurde doppelt belastet.',
      'Der Support hat eine Woche für eine Antwort gebraucht.',
      'Seit dem letzten Update zu viele Fehler, sehr ärgerlich.',
      'Ich finde nicht, wie ich meine Daten exportieren kann.',
    ],
  },
  es: {
    positive: [
      'Me encanta el nuevo panel, me ahorra horas cada semana.',
      'Muy fácil de configurar, todo el equipo lo usa a diario.',
      'Excelente producto y el soporte es increíble.',
      'Los informes son justo lo que necesitábamos.',
      'Rápido, fiable y las integraciones funcionan perfectamente.',
    ],
    neutral: [
      'Cumple su función, pero la navegación podría ser más sencilla.',
      'Bien en general, aunque algunas funciones son difíciles de encontrar.',
      'El precio es un poco alto para un equipo pequeño.',
      'Funciona bien, me gustaría tener más opciones de personalización.',
      'La aplicación móvil necesita mejoras.',
    ],
    negative: [
      'La aplicación es lenta y se cierra con informes grandes.',
      'La facturación es confusa y me cobraron dos veces.',
      'El soporte tardó una semana en responder.',
      'Demasiados errores desde la última versión, muy frustrante.',
      'No encuentro cómo exportar mis datos.',
    ],
  },
  ja: {
    positive: [
      '新しいダッシュボードがとても使いやすく、毎週何時間も節約できています。',
      '設定が簡単で、チーム全員が毎日使っています。',
      '素晴らしい製品で、サポートの対応も丁寧です。',
      'レポート機能がまさに必要としていたものでした。',
      '動作が速く安定していて、連携もスムーズです。',
    ],
    neutral: [
      '機能は十分ですが、ナビゲーションがもう少し分かりやすいと良いです。',
      '全体的には良いですが、一部の機能が見つけにくいです。',
      '小規模なチームには少し価格が高いと感じます。',
      'カスタマイズの選択肢がもっと欲しいです。',
      'モバイルアプリはまだ改善の余地があります。',
    ],
    negative: [
      'アプリが遅く、大きなレポートを開くと落ちます。',
      '請求が分かりにくく、二重に課金されました。',
      'サポートからの返信に一週間かかりました。',
      '前回のアップデート以降、不具合が多すぎます。',
      'データのエクスポート方法が分かりません。',
    ],
  },
  pt: {
    positive: [
      'Adoro o novo painel, economiza horas do meu trabalho.',
      'Muito fácil de configurar, toda a equipe usa diariamente.',
      'Ótimo produto e o suporte é excelente.',
      'Os relatórios são exatamente o que precisávamos.',
    ],
    neutral: [
      'Funciona, mas a navegação poderia ser mais simples.',
      'Bom no geral, algumas funções são difíceis de encontrar.',
      'O preço é um pouco alto para uma equipe pequena.',
      'O aplicativo móvel precisa de melhorias.',
    ],
    negative: [
      'O aplicativo é lento e trava com relatórios grandes.',
      'A cobrança é confusa e fui cobrado duas vezes.',
      'O suporte demorou uma semana para responder.',
      'Muitos erros desde a última atualização.',
    ],
  },
  it: {
    positive: [
      'Adoro la nuova dashboard, mi fa risparmiare ore ogni settimana.',
      'Facilissimo da configurare, tutto il team lo usa ogni giorno.',
      'Ottimo prodotto e assistenza eccellente.',
      'I report sono esattamente ciò di cui avevamo bisogno.',
    ],
    neutral: [
      'Fa il suo lavoro, ma la navigazione potrebbe essere più semplice.',
      'Buono nel complesso, alcune funzioni sono difficili da trovare.',
      'Il prezzo è un po’ alto per un piccolo team.',
      "L'app mobile ha bisogno di miglioramenti.",
    ],
    negative: [
      "L'app è lenta e si blocca con i report grandi.",
      'La fatturazione è confusa e mi hanno addebitato due volte.',
      "L'assistenza ha impiegato una settimana a rispondere.",
      "Troppi bug dall'ultimo aggiornamento.",
    ],
  },
  nl: {
    positive: [
      'Het nieuwe dashboard is geweldig en bespaart me veel tijd.',
      'Heel eenvoudig in te stellen, het hele team gebruikt het dagelijks.',
      'Top product en de support is erg behulpzaam.',
      'De rapporten zijn precies wat we nodig hadden.',
    ],
    neutral: [
      'Het werkt, maar de navigatie kan eenvoudiger.',
      'Over het algemeen goed, sommige functies zijn lastig te vinden.',
      'De prijs is wat hoog voor een klein team.',
      'De mobiele app kan nog beter.',
    ],
    negative: [
      'De app is traag en crasht bij grote rapporten.',
      'De facturatie is onduidelijk en ik ben dubbel belast.',
      'De support deed er een week over om te antwoorden.',
      'Te veel bugs sinds de laatste update.',
    ],
  },
};
