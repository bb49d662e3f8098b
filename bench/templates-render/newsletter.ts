// A realistic newsletter: 60 lines of MJML, 5 variables (name, issue, headline,
// cta_url, unsubscribe_url), head styles, an image, three articles, a button
// and a footer.
export const NEWSLETTER_SUBJECT = "{{name}}, issue #{{issue}}: {{headline}}";

export const NEWSLETTER_MJML = `<mjml>
  <mj-head>
    <mj-title>Issue #{{issue}}</mj-title>
    <mj-preview>{{headline}}</mj-preview>
    <mj-attributes>
      <mj-all font-family="Helvetica, Arial, sans-serif" />
      <mj-text font-size="15px" line-height="1.5" color="#333333" />
    </mj-attributes>
    <mj-style>.footer a { color: #888888; }</mj-style>
  </mj-head>
  <mj-body background-color="#f4f4f4">
    <mj-section background-color="#ffffff" padding="20px 0">
      <mj-column>
        <mj-image width="120px" src="https://cdn.example.com/logo.png" alt="Example Weekly" href="https://example.com" />
      </mj-column>
    </mj-section>
    <mj-section background-color="#ffffff">
      <mj-column>
        <mj-text font-size="22px" font-weight="bold">{{headline}}</mj-text>
        <mj-text>Hello {{name}}, here is what happened this week. We read everything so that you do not have to, and picked the three stories worth your time.</mj-text>
      </mj-column>
    </mj-section>
    <mj-section background-color="#ffffff">
      <mj-column width="40%">
        <mj-image src="https://cdn.example.com/a1.jpg" alt="Article one" />
      </mj-column>
      <mj-column width="60%">
        <mj-text font-weight="bold">Shipping faster with smaller batches</mj-text>
        <mj-text>Teams that ship small changes daily recover from incidents faster. A look at the numbers from 400 teams, and what they changed first.</mj-text>
      </mj-column>
    </mj-section>
    <mj-section background-color="#ffffff">
      <mj-column width="40%">
        <mj-image src="https://cdn.example.com/a2.jpg" alt="Article two" />
      </mj-column>
      <mj-column width="60%">
        <mj-text font-weight="bold">The quiet return of server-rendered pages</mj-text>
        <mj-text>Less JavaScript, faster first paint, simpler caching: why three large sites moved back, and what they kept from the single-page era.</mj-text>
      </mj-column>
    </mj-section>
    <mj-section background-color="#ffffff">
      <mj-column>
        <mj-text font-weight="bold">Reader question of the week</mj-text>
        <mj-text>"How do we test email templates?" Render them once per version, fill variables per message, and compare the text part too.</mj-text>
        <mj-button href="{{cta_url}}" background-color="#0b5fff" color="#ffffff">Read the full issue</mj-button>
      </mj-column>
    </mj-section>
    <mj-section padding="10px 0">
      <mj-column>
        <mj-divider border-color="#dddddd" border-width="1px" />
        <mj-text css-class="footer" font-size="12px" color="#888888" align="center">
          You receive this because you subscribed to Example Weekly.
          <a href="{{unsubscribe_url}}">Unsubscribe</a> · Example Ltd, Bahnhofstrasse 1, 8001 Zürich
        </mj-text>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;
