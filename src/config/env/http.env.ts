import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { toBool, toInt, toList } from '../env-transforms.js';

/** The HTTP server's variables (main.ts listens, http-app.ts sets it up). */
export class HttpEnv {
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /** Address to listen on: 0.0.0.0 (all IPv4) suits containers; 127.0.0.1 keeps the API on this host. */
  @IsString()
  @Matches(/^[A-Za-z0-9.:_-]{1,253}$/, { message: 'HOST must be an address or host name such as 0.0.0.0, 127.0.0.1 or ::' })
  HOST = '0.0.0.0';

  /**
   * Origins a browser app may call the API from (CORS); unset: none. http(s) origins, or an app
   * WebView's own scheme and host (Capacitor and Ionic on iOS: capacitor://localhost, ionic://localhost).
   */
  @IsOptional()
  @Transform(toList)
  @Matches(/^(https?:\/\/[^\s/?#]+(\/[^\s]*)?|[a-z][a-z0-9+.-]*:\/\/[a-z0-9.-]+(:\d{1,5})?)$/i, {
    each: true,
    message: "CORS_ORIGINS must list origins such as https://app.example.com (or an app WebView's, such as capacitor://localhost)",
  })
  CORS_ORIGINS?: string[];

  /** Time an HTTP request may take before the service answers 503. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  REQUEST_TIMEOUT_MS = 15_000;

  @Transform(toBool)
  @IsBoolean()
  DOCS_UI_ENABLED = true;
}
